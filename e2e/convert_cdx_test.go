package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/cdx"
	"warcdedup/migrate"
	"warcdedup/record"
	"warcdedup/scripts/gen"
)

// TestWarccdxFollowsConversion: a mostly-ARC collection indexed before its
// ARC files are converted in place (the ARC lines as pywb writes them: no
// filedesc line, a plain ARC record's length without its final line feed,
// the ARC line's content type, no digest), brought up to date by
// warccdx --conversion, equals what warcio.js writes for the converted
// collection, line for line once sorted: in CDXJ and in CDX.
func TestWarccdxFollowsConversion(t *testing.T) {
	cli := warcioCLI(t)
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	if _, err := gen.Write(coll, gen.Config{Files: 4, Records: 160, DupRate: 0.3, Seed: 24, MeanPayload: 2 << 10,
		Formats: []gen.Format{gen.ARCGz, gen.ARC, gen.WARC10Gz, gen.ARC2Gz}, NonCandidates: true, ARCQuirks: true}); err != nil {
		t.Fatal(err)
	}
	// The ARC records as stored, by file, before the conversion.
	arcRecords := map[string][]arcRecord{}
	var arcs []string
	for _, name := range []string{"gen-00000.arc.gz", "gen-00001.arc", "gen-00003.arc.gz"} {
		arcs = append(arcs, name)
		arcRecords[name] = readARC(t, filepath.Join(coll, name))
	}
	wd := filepath.Join(dir, "work")
	res, err := (&migrate.Converter{Options: migrate.Options{WorkDir: wd}}).Run(context.Background(), coll, nil)
	if err != nil || res.Count(migrate.Converted) != 3 {
		t.Fatalf("conversion: %v %+v", err, res)
	}
	var warcs []string
	for i := range 4 {
		warcs = append(warcs, filepath.Join(coll, fmt.Sprintf("gen-%05d.warc.gz", i)))
	}
	// The ARC index as it was, from warcio.js's of the conversion.
	arcIndexes := map[string][]byte{}
	for _, format := range []string{"cdxj", "cdx"} {
		fresh := indexWithWarcio(t, cli, warcs, "--format", format)
		if len(fresh) != 1 || fresh[0].err != nil {
			t.Fatalf("warcio.js: %+v", fresh)
		}
		arcIndexes[format] = arcIndex(t, fresh[0].out, arcs, arcRecords)
	}
	check := func(t *testing.T, format, args string) {
		fresh := indexWithWarcio(t, cli, warcs, "--format", format)
		if len(fresh) != 1 || fresh[0].err != nil {
			t.Fatalf("warcio.js: %+v", fresh)
		}
		os.WriteFile(filepath.Join(dir, "before."+format), arcIndexes[format], 0o644)
		stdout, stderr, code := sh(t, dir, "warccdx "+args+" before."+format+" | LC_ALL=C sort")
		if code != 0 {
			t.Fatalf("warccdx: exit %d: %s", code, stderr)
		}
		want := sortedLines(fresh[0].out)
		got := sortedLines([]byte(stdout))
		if !slices.Equal(got, want) {
			t.Errorf("warccdx %s: its index differs from warcio.js's (%d lines, %d):\n%s", args, len(got), len(want), lineDiff(got, want))
		}
		if strings.Contains(args, "--log") && !strings.Contains(stdout, "warc/revisit") {
			t.Error("the job wrote no revisit: the log was not tried")
		}
		if !strings.Contains(stderr, "3 filedesc lines added") {
			t.Errorf("summary: %s", stderr)
		}
	}
	for _, format := range []string{"cdxj", "cdx"} {
		t.Run("converted/"+format, func(t *testing.T) { check(t, format, "--conversion work/conversion.map") })
	}
	// Then deduplicated: the conversion, then the rewrite log.
	if _, stderr, code := sh(t, dir, "warcdedup run -q --work-dir work coll"); code != 0 {
		t.Fatalf("warcdedup run: exit %d: %s", code, stderr)
	}
	for _, format := range []string{"cdxj", "cdx"} {
		t.Run("deduplicated/"+format, func(t *testing.T) {
			check(t, format, "--conversion work/conversion.map --log work/rewrite.log")
		})
	}
}

type arcRecord struct {
	offset, length int64
	mime           string
}

// readARC reads the records of an ARC file as an indexer addresses them:
// offset, and length without a plain ARC's final line feeds (pywb's).
func readARC(t *testing.T, name string) []arcRecord {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rr, err := record.NewReader(f, name)
	if err != nil {
		t.Fatal(err)
	}
	var out []arcRecord
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := rr.Finish(); err != nil {
			t.Fatal(err)
		}
		length := rec.Length
		if !strings.HasSuffix(name, ".gz") {
			trailer, _ := rr.Trailer()
			length -= int64(len(trailer))
		}
		out = append(out, arcRecord{offset: rec.Offset, length: length, mime: rec.ARCFields.ContentType})
	}
}

// arcIndex makes the index of the ARC files from warcio.js's index of
// their conversions: the k-th line of a converted WARC, in offset order,
// is the k-th ARC record (the filedesc a metadata record, which the ARC
// index leaves out); urlkey, timestamp, URL and status are the record's
// either way.
func arcIndex(t *testing.T, fresh []byte, arcs []string, recs map[string][]arcRecord) []byte {
	t.Helper()
	r, err := cdx.NewReader(bytes.NewReader(fresh), "warcio", cdx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string][]*cdx.Line{}
	var out bytes.Buffer
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Kind != cdx.Record {
			out.Write(l.Raw)
			out.WriteByte('\n')
			continue
		}
		byFile[string(l.Filename)] = append(byFile[string(l.Filename)], l.Clone())
	}
	for file, lines := range byFile {
		arc := ""
		for _, a := range arcs {
			if strings.TrimSuffix(strings.TrimSuffix(a, ".gz"), ".arc")+".warc.gz" == file {
				arc = a
			}
		}
		if arc == "" {
			for _, l := range lines {
				out.Write(l.Raw)
				out.WriteByte('\n')
			}
			continue
		}
		slices.SortFunc(lines, func(a, b *cdx.Line) int { return int(a.Offset - b.Offset) })
		if len(lines) != len(recs[arc]) {
			t.Fatalf("%s: warcio.js has %d lines, the ARC %d records", file, len(lines), len(recs[arc]))
		}
		for k, l := range lines {
			if k == 0 {
				continue // the filedesc: no line in an ARC index
			}
			a := recs[arc][k]
			l.SetFilename(arc)
			l.SetOffset(a.offset)
			l.SetLength(a.length)
			l.SetMIME(a.mime)
			l.SetDigest("")
			out.Write(l.AppendTo(nil))
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// TestRunConvertARCCDX: run --convert-arc --cdx brings indexes of an ARC
// collection (CDXJ, CDX and gzip CDXJ, as LC_ALL=C sort orders them) up to
// date where they are, through the conversion and then the rewrite: each
// is then, line for line and in order, warcio.js's fresh index of the
// collection sorted, in its form; and undo --cdx brings them to warcio.js's
// index of the collection after the undo.
func TestRunConvertARCCDX(t *testing.T) {
	cli := warcioCLI(t)
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	if _, err := gen.Write(coll, gen.Config{Files: 4, Records: 160, DupRate: 0.3, Seed: 24, MeanPayload: 2 << 10,
		Formats: []gen.Format{gen.ARCGz, gen.ARC, gen.WARC10Gz, gen.ARC2Gz}, NonCandidates: true, ARCQuirks: true}); err != nil {
		t.Fatal(err)
	}
	arcs := []string{"gen-00000.arc.gz", "gen-00001.arc", "gen-00003.arc.gz"}
	arcRecords := map[string][]arcRecord{}
	for _, name := range arcs {
		arcRecords[name] = readARC(t, filepath.Join(coll, name))
	}
	// The ARC index as pywb writes it, from warcio.js's of a converted copy.
	if _, stderr, code := sh(t, dir, "cp -a coll copy"); code != 0 {
		t.Fatal(stderr)
	}
	res, err := (&migrate.Converter{Options: migrate.Options{WorkDir: filepath.Join(dir, "copywork")}}).Run(context.Background(), filepath.Join(dir, "copy"), nil)
	if err != nil || res.Count(migrate.Converted) != 3 {
		t.Fatalf("conversion of the copy: %v %+v", err, res)
	}
	warcsOf := func(c string) []string {
		var warcs []string
		for i := range 4 {
			warcs = append(warcs, filepath.Join(dir, c, fmt.Sprintf("gen-%05d.warc.gz", i)))
		}
		return warcs
	}
	fresh := func(c, format string) []string {
		t.Helper()
		ix := indexWithWarcio(t, cli, warcsOf(c), "--format", format)
		if len(ix) != 1 || ix[0].err != nil {
			t.Fatalf("warcio.js: %+v", ix)
		}
		return sortedLines(ix[0].out)
	}
	forms := []struct {
		name, format string
		gzip         bool
	}{
		{"index.cdxj", "cdxj", false},
		{"index.cdx", "cdx", false},
		{"index.cdxj.gz", "cdxj", true},
	}
	for _, f := range forms {
		ix := indexWithWarcio(t, cli, warcsOf("copy"), "--format", f.format)
		if len(ix) != 1 || ix[0].err != nil {
			t.Fatalf("warcio.js: %+v", ix)
		}
		data := []byte(strings.Join(sortedLines(arcIndex(t, ix[0].out, arcs, arcRecords)), "\n") + "\n")
		if f.gzip {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(data)
			zw.Close()
			data = b.Bytes()
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cdxArgs string
	for _, f := range forms {
		cdxArgs += " --cdx " + f.name
	}
	// An index left out of the run, for warccdx --in-place, and a ZipNum.
	late, err := os.ReadFile(filepath.Join(dir, "index.cdxj"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "late.cdxj"), late, 0o644)
	zipnum := indexForms[3]
	if zipnum.zipnum == nil || zipnum.cdx {
		t.Fatalf("indexForms[3] is %s, not a CDXJ ZipNum", zipnum.name)
	}
	zipnum.write(t, dir, strings.Split(strings.TrimSuffix(string(late), "\n"), "\n"))
	zipFiles := func() string {
		var b []byte
		for _, f := range []string{"wacz/index.idx", "wacz/index.cdx.gz"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, data...)
		}
		return string(b)
	}
	zipBefore := zipFiles()
	check := func(t *testing.T, when string) {
		for _, f := range forms {
			data, err := os.ReadFile(filepath.Join(dir, f.name))
			if err != nil {
				t.Fatal(err)
			}
			if f.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s %s: %v", when, f.name, err)
				}
				if data, err = io.ReadAll(zr); err != nil {
					t.Fatalf("%s %s: %v", when, f.name, err)
				}
			}
			got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			want := fresh("coll", f.format)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s differs from warcio.js's index of the collection, sorted (%d lines, %d):\n%s", when, f.name, len(got), len(want), lineDiff(sortedLines(data), want))
				if slices.Equal(sortedLines(data), want) {
					t.Errorf("%s: %s has the lines, not in sorted order", when, f.name)
				}
			}
		}
	}
	if _, stderr, code := sh(t, dir, "warcdedup run -q --convert-arc --work-dir work"+cdxArgs+" coll"); code != 0 {
		t.Fatalf("warcdedup run --convert-arc --cdx: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "index.cdxj")); !strings.Contains(string(b), "warc/revisit") {
		t.Error("the job wrote no revisit: the rewrite was not followed")
	}
	check(t, "after run")

	// warccdx --in-place --conversion brings the index left out there.
	if _, stderr, code := sh(t, dir, "warccdx -q --in-place --conversion work/conversion.map --log work/rewrite.log late.cdxj"); code != 0 {
		t.Errorf("warccdx --in-place --conversion: exit %d: %s", code, stderr)
	} else if b, _ := os.ReadFile(filepath.Join(dir, "late.cdxj")); !slices.Equal(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), fresh("coll", "cdxj")) {
		t.Errorf("warccdx --in-place --conversion: late.cdxj differs from warcio.js's index, sorted:\n%s", lineDiff(sortedLines(b), fresh("coll", "cdxj")))
	}
	// A ZipNum would gain the filedesc lines: left untouched, and said so.
	_, stderr, code := sh(t, dir, "warccdx -q --in-place --conversion work/conversion.map --log work/rewrite.log wacz/index.idx")
	if code != 1 || !strings.Contains(stderr, "filedesc lines") || !strings.Contains(stderr, "left untouched") {
		t.Errorf("warccdx --in-place --conversion of a ZipNum: exit %d, want 1 saying it is left untouched: %s", code, stderr)
	}
	if zipFiles() != zipBefore {
		t.Error("warccdx --in-place --conversion changed the ZipNum it refused")
	}
	if _, stderr, code := sh(t, dir, "warcdedup undo -q --work-dir work"+cdxArgs+" coll"); code != 0 {
		t.Fatalf("warcdedup undo --cdx: exit %d: %s", code, stderr)
	}
	check(t, "after undo")
}
