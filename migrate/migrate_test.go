package migrate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/archname"
	"warcdedup/convert"
	"warcdedup/convmap"
	"warcdedup/record"
	"warcdedup/scripts/gen"
	"warcdedup/verify"
)

// genCollection writes a mostly-ARC collection (ARC v1 and v2, .arc.gz and
// .arc, with real files' quirks; one WARC file) into dir.
func genCollection(t testing.TB, dir string, seed int64) {
	t.Helper()
	_, err := gen.Write(dir, gen.Config{Files: 5, Records: 120, DupRate: 0.3, Seed: seed, MeanPayload: 2 << 10,
		Formats: []gen.Format{gen.ARCGz, gen.ARC, gen.WARC10Gz, gen.ARC2Gz, gen.ARC2}, NonCandidates: true, Quirks: true, ARCQuirks: true})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot is every file of a directory tree by relative name: its SHA-256.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkConverted proves, independently of the Converter, that each ARC of
// originals is in coll as its WARC, record for record, and that the map
// names it with the ARC's SHA-256.
func checkConverted(t testing.TB, originals, coll, mapFile string) {
	t.Helper()
	m, err := convmap.LoadFile(mapFile)
	if err != nil {
		t.Fatal(err)
	}
	orig := snapshot(t, originals)
	for name, sum := range orig {
		if !archname.IsARC(name) {
			continue
		}
		if _, err := os.Stat(filepath.Join(coll, name)); err == nil {
			t.Errorf("%s is still in the collection", name)
			continue
		}
		warcName := convert.OutputName(name, false)
		f, err := m.Resolve(name)
		if err != nil || f == nil {
			t.Errorf("%s: not in the map (%v)", name, err)
			continue
		}
		if f.WARC != warcName || f.ARCSHA256 != sum {
			t.Errorf("%s: the map says %s from an ARC of SHA-256 %s; want %s from %s", name, f.WARC, f.ARCSHA256, warcName, sum)
		}
		arc := openFile(t, filepath.Join(originals, name))
		warc := openFile(t, filepath.Join(coll, warcName))
		var problems []string
		st, err := verify.Conversion(arc, warc, func(v string) { problems = append(problems, v) })
		if err != nil || st.Violations > 0 || st.Matched == 0 {
			t.Errorf("%s -> %s: %d matched, %v, %v", name, warcName, st.Matched, err, problems)
		}
		if got := snapshot(t, coll)[warcName]; got != f.WARCSHA256 {
			t.Errorf("%s: SHA-256 %s, the map says %s", warcName, got, f.WARCSHA256)
		}
	}
}

func openFile(t testing.TB, name string) verify.File {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return verify.File{Name: name, R: bytes.NewReader(b), Size: int64(len(b))}
}

func TestRunConvertsInPlace(t *testing.T) {
	dir := t.TempDir()
	originals, coll, wd := filepath.Join(dir, "orig"), filepath.Join(dir, "coll"), filepath.Join(dir, "work")
	genCollection(t, originals, 3)
	copyTree(t, originals, coll)
	os.Chmod(filepath.Join(coll, "gen-00000.arc.gz"), 0o640)
	c := &Converter{Options: Options{WorkDir: wd, Jobs: 2}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Count(Converted); n != 4 || len(res.Files) != 4 {
		t.Fatalf("%d of %d converted: %+v", n, len(res.Files), res.Files)
	}
	for name, mode := range map[string]os.FileMode{"gen-00000.warc.gz": 0o640, "gen-00001.warc.gz": 0o644} {
		if fi, err := os.Stat(filepath.Join(coll, name)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want its ARC's %v (%v)", name, fi.Mode().Perm(), mode, err)
		}
	}
	checkConverted(t, originals, coll, res.Map)
	// The WARC file that was there is untouched.
	if a, b := snapshot(t, originals)["gen-00002.warc.gz"], snapshot(t, coll)["gen-00002.warc.gz"]; a != b {
		t.Error("the collection's WARC file changed")
	}
	// Run again: nothing left to convert, the map still has every file.
	res, err = c.Run(context.Background(), coll, nil)
	if err != nil || len(res.Files) != 0 || res.Earlier != 4 {
		t.Fatalf("rerun: %v, %+v, earlier %d", err, res.Files, res.Earlier)
	}
	checkConverted(t, originals, coll, res.Map)
}

func TestRunKeepsARC(t *testing.T) {
	dir := t.TempDir()
	originals, coll, keep := filepath.Join(dir, "orig"), filepath.Join(dir, "coll"), filepath.Join(dir, "keep")
	genCollection(t, originals, 4)
	copyTree(t, originals, coll)
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: keep}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil || res.Count(Converted) != 4 {
		t.Fatalf("%v %+v", err, res)
	}
	orig, kept := snapshot(t, originals), snapshot(t, keep)
	for name, sum := range orig {
		if archname.IsARC(name) && kept[name] != sum {
			t.Errorf("%s: kept %q, want SHA-256 %s", name, kept[name], sum)
		}
	}
	checkConverted(t, originals, coll, res.Map)
}

// TestRunLeavesWhatItCannotProve: an ARC beside a WARC of its name that is
// not its conversion, a damaged ARC, a truncated one and one that is no
// ARC are all left byte for byte and named; an ARC beside its own earlier
// conversion (arc2warc -o coll coll) is adopted; the rest are converted.
func TestRunLeavesWhatItCannotProve(t *testing.T) {
	dir := t.TempDir()
	originals, coll := filepath.Join(dir, "orig"), filepath.Join(dir, "coll")
	genCollection(t, originals, 5)
	// gen-00000.arc.gz: its WARC name is taken by another file.
	write(t, filepath.Join(originals, "gen-00000.warc.gz"), []byte("not this ARC's conversion\n"))
	// gen-00001.arc: junk between its third and fourth records.
	b := read(t, filepath.Join(originals, "gen-00001.arc"))
	at := recordOffsets(t, b)[3]
	write(t, filepath.Join(originals, "gen-00001.arc"), append(append(b[:at:at], "junk junk\n"...), b[at:]...))
	// gen-00003.arc.gz: cut short inside its last record.
	b = read(t, filepath.Join(originals, "gen-00003.arc.gz"))
	write(t, filepath.Join(originals, "gen-00003.arc.gz"), b[:len(b)-30])
	// junk.arc: no ARC.
	write(t, filepath.Join(originals, "junk.arc"), []byte("hello\n"))
	// sub/own.arc.gz beside its earlier conversion, as arc2warc writes it.
	os.MkdirAll(filepath.Join(originals, "sub"), 0o755)
	write(t, filepath.Join(originals, "sub", "own.arc.gz"), read(t, filepath.Join(originals, "gen-00004.arc")))
	var conv bytes.Buffer
	if _, err := convert.Convert(bytes.NewReader(read(t, filepath.Join(originals, "sub", "own.arc.gz"))), "sub/own.arc.gz", "own.warc.gz", &conv, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(originals, "sub", "own.warc.gz"), conv.Bytes())
	copyTree(t, originals, coll)

	var reported []string
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), Report: func(err error) { reported = append(reported, err.Error()) }}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{"gen-00000.arc.gz": Refused, "gen-00001.arc": Damaged, "gen-00003.arc.gz": Damaged, "gen-00004.arc": Converted,
		"junk.arc": NotARC, "sub/own.arc.gz": Adopted}
	orig, after := snapshot(t, originals), snapshot(t, coll)
	for _, o := range res.Files {
		if o.Status != want[o.ARC] {
			t.Errorf("%s: %s (%s), want %s", o.ARC, o.Status, o.Reason, want[o.ARC])
		}
		if o.Status.Left() {
			if after[o.ARC] != orig[o.ARC] {
				t.Errorf("%s: left, but changed", o.ARC)
			}
			if !strings.Contains(strings.Join(reported, "\n"), o.ARC+": "+o.Status.String()) {
				t.Errorf("%s: not reported: %q", o.ARC, reported)
			}
		}
	}
	if len(res.Files) != len(want) {
		t.Errorf("%d outcomes: %+v", len(res.Files), res.Files)
	}
	if after["gen-00000.warc.gz"] != orig["gen-00000.warc.gz"] || after["sub/own.warc.gz"] != orig["sub/own.warc.gz"] {
		t.Error("an existing WARC file changed")
	}
	if _, ok := after["gen-00001.warc.gz"]; ok {
		t.Error("a damaged ARC's WARC was put in place")
	}
	m, err := convmap.LoadFile(res.Map)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files()) != 2 {
		t.Errorf("the map has %d files, want the 2 converted", len(m.Files()))
	}
}

// recordOffsets are the offsets of a file's records.
func recordOffsets(t testing.TB, b []byte) []int64 {
	t.Helper()
	r, err := record.NewReader(bytes.NewReader(b), "test")
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return offs
		}
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, rec.Offset)
	}
}

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMapFollowsIndexOffsets: each map record's offsets are those of the
// record in the ARC as stored and of its gzip member in the WARC.
func TestMapFollowsIndexOffsets(t *testing.T) {
	dir := t.TempDir()
	originals, coll := filepath.Join(dir, "orig"), filepath.Join(dir, "coll")
	genCollection(t, originals, 6)
	copyTree(t, originals, coll)
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work")}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(res.Map)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := convmap.NewReader(f, res.Map)
	n := 0
	for {
		file, rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			continue
		}
		n++
		arc := read(t, filepath.Join(originals, file.ARC))[rec.OldOffset : rec.OldOffset+rec.OldLength]
		warc := read(t, filepath.Join(coll, file.WARC))[rec.NewOffset : rec.NewOffset+rec.NewLength]
		if strings.HasSuffix(file.ARC, ".gz") != (arc[0] == 0x1f) || warc[0] != 0x1f || warc[1] != 0x8b {
			t.Fatalf("%s %d / %s %d: not a record's start", file.ARC, rec.OldOffset, file.WARC, rec.NewOffset)
		}
		if !strings.HasSuffix(file.ARC, ".gz") && !bytes.HasPrefix(arc, []byte("filedesc:")) && !bytes.HasPrefix(arc, []byte("http")) && !bytes.HasPrefix(arc, []byte("dns:")) {
			t.Fatalf("%s %d: %q starts no ARC record", file.ARC, rec.OldOffset, arc[:20])
		}
	}
	if n < 100 {
		t.Errorf("%d records mapped", n)
	}
}

// TestWholeGzipARC: an ARC gzipped as one member is converted and proved
// (the converter and the proof read its inflated stream), and its map
// section has no records: no index can address them.
func TestWholeGzipARC(t *testing.T) {
	dir := t.TempDir()
	originals, coll := filepath.Join(dir, "orig"), filepath.Join(dir, "coll")
	genCollection(t, originals, 8)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(read(t, filepath.Join(originals, "gen-00001.arc")))
	zw.Close()
	os.Remove(filepath.Join(originals, "gen-00001.arc"))
	write(t, filepath.Join(originals, "whole.arc.gz"), z.Bytes())
	copyTree(t, originals, coll)
	res, err := (&Converter{Options: Options{WorkDir: filepath.Join(dir, "work")}}).Run(context.Background(), coll, nil)
	if err != nil || res.Count(Converted) != 4 {
		t.Fatalf("%v %+v", err, res)
	}
	checkConverted(t, originals, coll, res.Map)
	m, _ := convmap.LoadFile(res.Map)
	f, _ := m.Resolve("whole.arc.gz")
	if _, err := m.Lookup(f, 0, -1); err == nil || !strings.Contains(err.Error(), "as a whole") {
		t.Errorf("a line of the whole-gzip ARC: %v", err)
	}
}

func verifyConversion(arc, warc verify.File, problems *[]string) (int64, error) {
	st, err := verify.Conversion(arc, warc, func(v string) { *problems = append(*problems, v) })
	return st.Violations, err
}
