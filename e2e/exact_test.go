package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/fixity"
	"warcdedup/gzmember"
	"warcdedup/gzmulti"
	"warcdedup/internal/warctest"
	"warcdedup/restore"
	"warcdedup/rewritelog"
)

// The corpus files of issue 20's bit-exact undo: written by Heritrix (zlib
// level 6, through Java's Deflater), wget (level 9), warcprox (Python's
// gzip module, flushed before close) and gowarc (Go's own deflate, which
// no zlib setting makes).
var exactCorpus = []struct {
	name, path string
	exact      bool // every member zlib can make: bit for bit after undo
}{
	{"heritrix", "oduwsdl+ipwb/samples/warcs/sample-1.warc.gz", true},
	{"wget", "iipc+webarchive-commons/src/test/resources/org/archive/format/gzip/IAH-urls-wget.warc.gz", true},
	{"warcprox", "webrecorder+pywb/sample_archive/warcs/example2.warc.gz", true},
	{"gowarc", "internetarchive+gowarc/testdata/warcs/test.warc.gz", false},
}

// earlierCopy writes to dst the WARC file src with every record dated a
// year earlier and given another record ID: captures of the same payloads
// made before, which the run keeps as originals, so that src's responses
// become revisits of them. Each record is a gzip member of its own (Go's:
// the copy is never restored).
func earlierCopy(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zr, err := gzmulti.NewReader(bytes.NewReader(data), src)
	if err != nil {
		t.Fatal(err)
	}
	date := regexp.MustCompile(`(?m)^(WARC-Date: )(\d{4})`)
	id := regexp.MustCompile(`(?m)^(WARC-Record-ID: <urn:uuid:)([0-9a-fA-F])`)
	for {
		if _, err := zr.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rec, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		end := bytes.Index(rec, []byte("\r\n\r\n"))
		if end < 0 {
			t.Fatalf("%s: a member that holds no WARC header", src)
		}
		head := date.ReplaceAllFunc(rec[:end], func(m []byte) []byte {
			y, _ := strconv.Atoi(string(m[len(m)-4:]))
			return fmt.Appendf(m[:len(m)-4:len(m)-4], "%04d", y-1)
		})
		head = id.ReplaceAllFunc(head, func(m []byte) []byte {
			c := m[len(m)-1]
			return append(m[:len(m)-1:len(m)-1], "0123456789abcdef0"[strings.IndexByte("0123456789abcdef", c|0x20)+1])
		})
		zw := gzip.NewWriter(&out)
		zw.Write(head)
		zw.Write(rec[end:])
		zw.Close()
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// zlibCopy writes to dst the .warc.gz file src with every member
// compressed again by zlib with setting s and a ten-byte header: the
// file as a crawler using zlib would have written it.
func zlibCopy(t *testing.T, src, dst string, s gzmember.Setting) {
	t.Helper()
	zlibCopyHeader(t, src, dst, s, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
}

// zlibCopyHeader is zlibCopy with the gzip header hdr on every member.
func zlibCopyHeader(t *testing.T, src, dst string, s gzmember.Setting, hdr []byte) {
	t.Helper()
	warctest.ZlibCopy(t, src, dst, hdr, s)
}

// undoReport is what an undo reports of its files: undo.json's figures,
// and each file's verdict from the run log.
type undoReport struct {
	BitExact, BytesDiffer, Recompressed int64
	Differ, Unexplained                 []string
	Stats                               struct {
		Members restore.MemberStats
	}
	verdicts map[string]string // file -> the run log's verdict
}

// readUndoReport reads undo.json and the run log of the work directory wd.
func readUndoReport(t *testing.T, wd string) *undoReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(wd, "undo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r undoReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	runLog, err := os.ReadFile(filepath.Join(wd, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	r.verdicts = map[string]string{}
	line := regexp.MustCompile(`(?m) undo: (\S+): ((restored bit for bit|records equal).*)$`)
	for _, m := range line.FindAllStringSubmatch(string(runLog), -1) {
		r.verdicts[m[1]] = m[2] // the last undo's
	}
	return &r
}

// logMembers counts the revisit entries of each file in a rewrite log,
// and those with an original member (field 10).
func logMembers(t *testing.T, log string) (revisits, described map[string]int) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	revisits, described = map[string]int{}, map[string]int{}
	r := rewritelog.NewReader(f, log)
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == rewritelog.Revisit {
			revisits[e.File]++
			if e.OriginalMember != "" {
				described[e.File]++
			}
		}
	}
}

// TestUndoBitExact is issue 20's bit-exact undo on real files: each
// corpus file of a writer using zlib (Heritrix, wget, warcprox) and of one
// that does not (gowarc) is deduplicated against an earlier copy of
// itself, every gzip member of its duplicates described in the rewrite
// log, then undone. The files of zlib writers come back with the SHA-256
// they had before the run, and the undo says "restored bit for bit"; the
// gowarc file gets its records back (the same bytes inflated), in other
// gzip members, and the undo says so with the count.
func TestUndoBitExact(t *testing.T) {
	needCorpus(t)
	if !gzmember.Available() {
		t.Skip("a build without zlib rebuilds no member (TestUndoNoZlib)")
	}
	work := t.TempDir()
	for _, c := range exactCorpus {
		src := filepath.Join(corpusDir, filepath.FromSlash(c.path))
		copyFile(t, src, filepath.Join(work, "coll", c.name+".warc.gz"))
		earlierCopy(t, src, filepath.Join(work, "coll", "earlier", c.name+".warc.gz"))
	}
	before := fileSums(t, filepath.Join(work, "coll"))
	r := runDedup(t, work, "coll", "keep")
	checkViolations(t, r)
	revisits, described := logMembers(t, filepath.Join(work, "keep", "rewrite.log"))
	for _, c := range exactCorpus {
		name := c.name + ".warc.gz"
		if revisits[name] == 0 || described[name] != revisits[name] {
			t.Fatalf("%s: %d revisits, %d with their member described in the log\n%s", name, revisits[name], described[name], r.stderr)
		}
		if revisits["earlier/"+name] != 0 {
			t.Fatalf("the earlier copy of %s was rewritten", name)
		}
		t.Logf("%s: %d revisits", name, revisits[name])
	}
	after := fileSums(t, filepath.Join(work, "coll"))

	summary, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
	t.Log(summary + stderr)
	if code != 0 {
		t.Fatalf("undo: exit %d", code)
	}
	rep := readUndoReport(t, filepath.Join(work, "keep"))
	now := fileSums(t, filepath.Join(work, "coll"))
	var gowarcRevisits int
	for _, c := range exactCorpus {
		name := c.name + ".warc.gz"
		verdict := rep.verdicts[name]
		switch {
		case after[name] == before[name]:
			t.Errorf("%s: not rewritten", name)
		case c.exact && now[name] != before[name]:
			t.Errorf("%s: SHA-256 %s after undo, %s before the run", name, now[name], before[name])
		case c.exact && verdict != bitExactVerdict(t, filepath.Join(work, "coll", name)):
			t.Errorf("%s: undo says %q", name, verdict)
		case !c.exact:
			gowarcRevisits = revisits[name]
			want := fmt.Sprintf("records equal, bytes differ (%d member recompressed; no setting matched: %d)", revisits[name], revisits[name])
			if now[name] == before[name] || verdict != want {
				t.Errorf("%s: undo says %q, want %q (SHA-256 before %s, now %s)", name, verdict, want, before[name], now[name])
			}
			got, _ := os.ReadFile(filepath.Join(work, "coll", name))
			want2, _ := os.ReadFile(filepath.Join(corpusDir, filepath.FromSlash(c.path)))
			g, gerr := inflateAll(got)
			w, werr := inflateAll(want2)
			if gerr != nil || werr != nil || !bytes.Equal(g, w) {
				t.Errorf("%s: its records differ after undo (%v, %v)", name, gerr, werr)
			}
		}
	}
	exact := int64(len(exactCorpus) - 1)
	if rep.BitExact != exact || rep.BytesDiffer != 1 || rep.Recompressed != int64(gowarcRevisits) || len(rep.Unexplained) != 0 {
		t.Errorf("undo.json: %d bit for bit, %d differ, %d recompressed, unexplained %v; want %d, 1, %d", rep.BitExact, rep.BytesDiffer, rep.Recompressed, rep.Unexplained, exact, gowarcRevisits)
	}
	if m := rep.Stats.Members; m.NoSetting != int64(gowarcRevisits) || m.NoDescription+m.NoZlib != 0 || m.Rebuilt == 0 {
		t.Errorf("undo.json: members %+v", m)
	}
	for _, want := range []string{fmt.Sprintf("of those restored: %d restored bit for bit", exact), "gowarc.warc.gz: records equal, bytes differ"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary does not say %q", want)
		}
	}
}

// TestUndoBitExactGenerated: generated collections, deduplicated and
// undone twice over (run, undo, run, undo: the second run's originals are
// members the first undo wrote), have each file's SHA-256 from before the
// first run again after each undo, and each undo says "restored bit for
// bit" of every file it restored. In one, the .warc.gz files are as
// Go's gzip writes them (which undo's own fresh members equal: no zlib
// setting makes them); in the other, as zlib writes them at level 9
// (wget's), whose members undo rebuilds.
func TestUndoBitExactGenerated(t *testing.T) {
	if !gzmember.Available() {
		t.Skip("a build without zlib rebuilds no member (TestUndoNoZlib)")
	}
	for _, c := range []struct {
		name string
		zlib *gzmember.Setting
	}{
		{"go gzip", nil},
		{"zlib level 9", &gzmember.Setting{Level: 9, MemLevel: 8, WindowBits: 15}},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			coll := filepath.Join(work, "coll")
			undoCollection(t, work, false)
			if c.zlib != nil {
				names, _ := filepath.Glob(filepath.Join(coll, "*.gz"))
				for _, n := range names {
					zlibCopy(t, n, n, *c.zlib)
				}
			}
			before := fileSums(t, coll)
			for cycle := 1; cycle <= 2; cycle++ {
				r := runDedup(t, work, "coll", "keep")
				checkViolations(t, r)
				if r.code != 0 {
					t.Fatalf("cycle %d: run: exit %d\n%s", cycle, r.code, r.stderr)
				}
				revisits, described := logMembers(t, filepath.Join(work, "keep", "rewrite.log"))
				rewritten := 0
				for name, n := range revisits {
					if strings.HasSuffix(name, ".gz") && described[name] != n {
						t.Errorf("cycle %d: %s: %d of %d revisits (all runs) with their member described", cycle, name, described[name], n)
					}
					rewritten++
				}
				_, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
				if code != 0 {
					t.Fatalf("cycle %d: undo: exit %d\n%s", cycle, code, stderr)
				}
				rep := readUndoReport(t, filepath.Join(work, "keep"))
				now := fileSums(t, coll)
				for name, sum := range before {
					if now[name] != sum {
						t.Errorf("cycle %d: %s: SHA-256 %s after undo, %s before the first run", cycle, name, now[name], sum)
					}
				}
				if rep.BitExact != int64(rewritten) || rep.BytesDiffer != 0 {
					t.Errorf("cycle %d: undo.json: %d files bit for bit, %d differ; %d files were rewritten", cycle, rep.BitExact, rep.BytesDiffer, rewritten)
				}
				for name := range revisits {
					if want := bitExactVerdict(t, filepath.Join(coll, name)); rep.verdicts[name] != want {
						t.Errorf("cycle %d: %s: the run log says %q", cycle, name, rep.verdicts[name])
					}
				}
				m := rep.Stats.Members
				if c.zlib != nil && (m.Rebuilt == 0 || m.NoSetting+m.NoDescription+m.NoZlib != 0) {
					t.Errorf("cycle %d: zlib's members: %+v, want every one rebuilt", cycle, m)
				}
				if c.zlib == nil && (m.Rebuilt != 0 || m.NoSetting == 0) {
					t.Errorf("cycle %d: Go's members: %+v, want none rebuilt", cycle, m)
				}
				t.Logf("cycle %d: %d files restored bit for bit; members %+v", cycle, rep.BitExact, m)
			}
		})
	}
}

// TestUndoNoZlib: warcdedup built without cgo (so without zlib) runs and
// undoes as before: every member compressed afresh, "no zlib" given as
// the reason, the records as they were, exit status 0.
func TestUndoNoZlib(t *testing.T) {
	needCorpus(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "../cmd/warcdedup")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building warcdedup without cgo: %v\n%s", err, out)
	}
	work := t.TempDir()
	c := exactCorpus[0] // Heritrix's: every member zlib's
	src := filepath.Join(corpusDir, filepath.FromSlash(c.path))
	copyFile(t, src, filepath.Join(work, "coll", "heritrix.warc.gz"))
	earlierCopy(t, src, filepath.Join(work, "coll", "earlier", "heritrix.warc.gz"))
	warcdedup := filepath.Join(bin, "warcdedup")
	if out, err := exec.Command(warcdedup, "run", "--work-dir", filepath.Join(work, "keep"), filepath.Join(work, "coll")).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	revisits, described := logMembers(t, filepath.Join(work, "keep", "rewrite.log"))
	n := revisits["heritrix.warc.gz"]
	if n == 0 || described["heritrix.warc.gz"] != n {
		t.Fatalf("%d revisits, %d described: the pure Go build describes members too", n, described["heritrix.warc.gz"])
	}
	out, err := exec.Command(warcdedup, "undo", "--work-dir", filepath.Join(work, "keep"), filepath.Join(work, "coll")).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	want := fmt.Sprintf("heritrix.warc.gz: records equal, bytes differ (%d members recompressed; no zlib: %d)", n, n)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), fmt.Sprintf("compressed afresh (no zlib: %d)", n)) {
		t.Errorf("undo does not say %q", want)
	}
	rep := readUndoReport(t, filepath.Join(work, "keep"))
	if m := rep.Stats.Members; m.NoZlib != int64(n) || m.Rebuilt+m.NoSetting+m.NoDescription != 0 || rep.BytesDiffer != 1 || len(rep.Unexplained) != 0 {
		t.Errorf("undo.json: members %+v, %d files differ, unexplained %v", m, rep.BytesDiffer, rep.Unexplained)
	}
	got, _ := os.ReadFile(filepath.Join(work, "coll", "heritrix.warc.gz"))
	orig, _ := os.ReadFile(src)
	g, gerr := inflateAll(got)
	w, werr := inflateAll(orig)
	if gerr != nil || werr != nil || !bytes.Equal(g, w) {
		t.Errorf("the records differ after undo (%v, %v)", gerr, werr)
	}
}

// TestUndoGarbledMember: a rewrite log whose tenth field (a revisit's
// original member) is garbled is refused by undo before it changes
// anything, naming the log and the line: exit status 2.
func TestUndoGarbledMember(t *testing.T) {
	garble := []struct {
		name string
		edit func(field, other string) string
	}{
		{"a character that is not base64url", func(f, _ string) string { return f[:len(f)-1] + "!" }},
		{"another form", func(f, _ string) string { return "gz9" + f[3:] }},
		{"another entry's member", func(_, other string) string { return other }},
		{"cut short", func(f, _ string) string { return f[:len(f)/2] }},
	}
	for _, g := range garble {
		t.Run(g.name, func(t *testing.T) {
			work := t.TempDir()
			undoCollection(t, work, false)
			if _, stderr, code := sh(t, work, "warcdedup run -q --work-dir keep coll"); code != 0 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			logName := filepath.Join(work, "keep", "rewrite.log")
			data, err := os.ReadFile(logName)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(data), "\n")
			at, other := -1, ""
			for i, l := range lines {
				f := strings.Fields(l)
				if len(f) != 10 {
					continue
				}
				if at < 0 {
					at = i
				} else if f[2] != strings.Fields(lines[at])[2] {
					other = f[9]
					break
				}
			}
			if at < 0 || other == "" {
				t.Fatal("no two entries with an original member of other lengths")
			}
			f := strings.Fields(lines[at])
			f[9] = g.edit(f[9], other)
			lines[at] = strings.Join(f, " ") + "\n"
			// Written in place, its size record made to agree: only the
			// field is wrong.
			garbled := strings.Join(lines, "")
			if err := os.WriteFile(logName, []byte(garbled), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := rewritelog.WriteEnd(logName, int64(len(garbled))); err != nil {
				t.Fatal(err)
			}
			before := fileSums(t, filepath.Join(work, "coll"))
			_, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
			t.Log(stderr)
			want := fmt.Sprintf("keep/rewrite.log:%d: field 10 (original-member)", at+1)
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("undo: exit %d, want 2 and an error with %q", code, want)
			}
			if now := fileSums(t, filepath.Join(work, "coll")); !maps.Equal(now, before) {
				t.Error("undo changed the collection")
			}
		})
	}
}

// TestUndoNoDescription: members the log does not describe are compressed
// afresh, and undo says "no description": those of a file whose gzip
// headers are longer than 1 KiB (an extra field of 2,000 bytes: the
// rewrite describes no such member), and every member of a log written before the
// tenth field (nine-field lines). The records are as they were.
func TestUndoNoDescription(t *testing.T) {
	if !gzmember.Available() {
		t.Skip("a build without zlib rebuilds no member (TestUndoNoZlib)")
	}
	level6 := gzmember.Setting{Level: 6, MemLevel: 8, WindowBits: 15}
	for _, c := range []struct {
		name      string
		header    []byte // of every member of the .gz files, nil: ten bytes
		oldLog    bool   // the log's tenth fields removed, as a log of an older version
		described bool   // the run logs descriptions
	}{
		{"a gzip header over 1 KiB", longHeader(2000), false, false},
		{"a log written before the field", nil, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			coll := filepath.Join(work, "coll")
			undoCollection(t, work, false)
			names, _ := filepath.Glob(filepath.Join(coll, "*.gz"))
			for _, n := range names {
				if c.header != nil {
					zlibCopyHeader(t, n, n, level6, c.header)
				} else {
					zlibCopy(t, n, n, level6)
				}
			}
			uncompressed := uncompressedSums(t, work)
			if _, stderr, code := sh(t, work, "warcdedup run -q --work-dir keep coll"); code != 0 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			logName := filepath.Join(work, "keep", "rewrite.log")
			revisits, described := logMembers(t, logName)
			gz := 0
			for name, n := range revisits {
				if !strings.HasSuffix(name, ".gz") {
					continue
				}
				gz += n
				if c.described != (described[name] == n) || !c.described && described[name] != 0 {
					t.Errorf("%s: %d of %d revisits with their member described", name, described[name], n)
				}
			}
			if gz == 0 {
				t.Fatal("no revisit in a .gz file")
			}
			if c.oldLog {
				data, err := os.ReadFile(logName)
				if err != nil {
					t.Fatal(err)
				}
				old := regexp.MustCompile(`(?m) gz[12]\.\S+$`).ReplaceAll(data, nil)
				if err := os.WriteFile(logName, old, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := rewritelog.WriteEnd(logName, int64(len(old))); err != nil {
					t.Fatal(err)
				}
				if _, described := logMembers(t, logName); len(described) != 0 {
					t.Fatal("tenth fields left")
				}
			}
			_, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
			t.Log(stderr)
			if code != 0 {
				t.Fatalf("undo: exit %d", code)
			}
			rep := readUndoReport(t, filepath.Join(work, "keep"))
			if m := rep.Stats.Members; m.NoDescription != int64(gz) || m.Rebuilt+m.NoSetting+m.NoZlib != 0 {
				t.Errorf("members %+v, want %d without description", m, gz)
			}
			for _, n := range names {
				name := filepath.Base(n)
				if revisits[name] == 0 {
					continue
				}
				want := fmt.Sprintf("records equal, bytes differ (%s recompressed; no description: %d)", map[bool]string{true: "1 member", false: fmt.Sprint(revisits[name], " members")}[revisits[name] == 1], revisits[name])
				if rep.verdicts[name] != want {
					t.Errorf("%s: undo says %q, want %q", name, rep.verdicts[name], want)
				}
			}
			if now := uncompressedSums(t, work); !maps.Equal(now, uncompressed) {
				t.Error("the records are not as they were")
			}
		})
	}
}

// longHeader is a gzip header with an extra field (FEXTRA) of one subfield
// of n bytes.
func longHeader(n int) []byte {
	h := []byte{0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, byte(n + 4), byte((n + 4) >> 8), 'W', 'D', byte(n), byte(n >> 8)}
	return append(h, bytes.Repeat([]byte{'x'}, n)...)
}

// TestUndoUnexplained: a file whose every member undo rebuilt, and whose
// SHA-256 is still not the one the log gives it before the run (here the
// log's "# file" line altered), is named loudly, exit status 1: undo
// cannot account for the difference.
func TestUndoUnexplained(t *testing.T) {
	if !gzmember.Available() {
		t.Skip("a build without zlib rebuilds no member (TestUndoNoZlib)")
	}
	work := t.TempDir()
	coll := filepath.Join(work, "coll")
	undoCollection(t, work, false)
	names, _ := filepath.Glob(filepath.Join(coll, "*.gz"))
	for _, n := range names {
		zlibCopy(t, n, n, gzmember.Setting{Level: 6, MemLevel: 8, WindowBits: 15})
	}
	if _, stderr, code := sh(t, work, "warcdedup run -q --work-dir keep coll"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	logName := filepath.Join(work, "keep", "rewrite.log")
	data, err := os.ReadFile(logName)
	if err != nil {
		t.Fatal(err)
	}
	// The first .gz file's BLAKE3 before the run, as the log gives it.
	fixLine := regexp.MustCompile(`(?m)^# file (\S+\.gz) \d+ blake3:([0-9a-f]{64}) `)
	m := fixLine.FindSubmatchIndex(data)
	if m == nil {
		t.Fatal("no \"# file\" line of a .gz file")
	}
	name := string(data[m[2]:m[3]])
	altered := bytes.Clone(data)
	copy(altered[m[4]:m[5]], strings.Repeat("0", 64))
	if err := os.WriteFile(logName, altered, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
	t.Log(stderr)
	want := name + ": records equal, yet bytes differ with every gzip member rebuilt (or none): this undo cannot account for the difference"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("undo: exit %d, want 1 and %q", code, want)
	}
	rep := readUndoReport(t, filepath.Join(work, "keep"))
	if len(rep.Unexplained) != 1 || !strings.HasPrefix(rep.Unexplained[0], name+": blake3:") || rep.Stats.Members.Recompressed() != 0 {
		t.Errorf("undo.json: unexplained %v, members %+v", rep.Unexplained, rep.Stats.Members)
	}
}

// bitExactVerdict is what undo says of the file at path restored bit for
// bit: its fixity sum as the rewrite log writes it (the test checks apart
// that its SHA-256 is the one from before the run).
func bitExactVerdict(t *testing.T, path string) string {
	t.Helper()
	_, sum, err := fixity.FileSum(path)
	if err != nil {
		t.Fatal(err)
	}
	return "restored bit for bit (" + sum + ", as before the runs undone)"
}
