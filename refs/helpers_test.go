package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/record"
	"warcdedup/revisit"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/source"
	"warcdedup/verify"
	"warcdedup/warcsum"
)

// coll is a generated collection and the manifest warcrefs reads for it.
type coll struct {
	dir string
	res *gen.Result
	// all is the whole numbered manifest: the originals manifest.
	all []manifest.Line
	// dups are the copy > 1 lines of its WARC files, sorted by file and
	// offset: what warcrefs is given.
	dups []manifest.Line
	// arcDups are the copy > 1 lines of its ARC files.
	arcDups []manifest.Line
	// lines is the whole numbered manifest sorted by file and offset: what
	// the pipeline gives warcrefs (it rewrites only the duplicates).
	lines []manifest.Line
}

func isARCName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".arc") || strings.HasSuffix(n, ".arc.gz")
}

// generate writes a collection into a new temporary directory.
func generate(t testing.TB, cfg gen.Config) *coll {
	t.Helper()
	dir := t.TempDir()
	res, err := gen.Write(dir, cfg)
	if err != nil {
		t.Fatalf("gen.Write: %v", err)
	}
	c := &coll{dir: dir, res: res, all: res.Expected}
	for _, l := range res.Expected {
		if l.Copy <= 1 {
			continue
		}
		if isARCName(l.File) {
			c.arcDups = append(c.arcDups, l)
		} else {
			c.dups = append(c.dups, l)
		}
	}
	sortByFile(c.dups)
	sortByFile(c.arcDups)
	c.lines = slices.Clone(res.Expected)
	sortByFile(c.lines)
	if len(c.dups) == 0 {
		t.Fatalf("the collection has no duplicates in WARC files: %s", res.Summary())
	}
	return c
}

func sortByFile(lines []manifest.Line) {
	slices.SortStableFunc(lines, func(a, b manifest.Line) int { return manifest.ByFile.Compare(&a, &b) })
}

// manifestText writes lines in manifest form.
func manifestText(lines []manifest.Line) []byte {
	var b []byte
	for i := range lines {
		b = lines[i].Append(b)
	}
	return b
}

// byFileName groups lines by field 1.
func byFileName(lines []manifest.Line) map[string][]manifest.Line {
	m := map[string][]manifest.Line{}
	for _, l := range lines {
		m[l.File] = append(m[l.File], l)
	}
	return m
}

// outcome is what one Run did.
type outcome struct {
	stats   Stats
	err     error
	refused []error
	warns   []error
	logText string
	log     []rewritelog.Entry
	files   []rewritelog.Fixity
	tl      *testLog // the log the run wrote to, for a run on its result
}

// refusedFor returns the refusal of file, or nil.
func (o *outcome) refusedFor(file string) *inplace.RefusedError {
	for _, err := range o.refused {
		var re *inplace.RefusedError
		if errors.As(err, &re) && re.File == file {
			return re
		}
	}
	return nil
}

// originalsOf makes the Originals of a numbered manifest (any order),
// reading originals under roots.
func originalsOf(t testing.TB, all []manifest.Line, roots ...string) *originals.Originals {
	t.Helper()
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	text := manifestText(sorted)
	tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "originals.manifest")
	if err != nil {
		t.Fatal(err)
	}
	o, err := originals.New(&source.Locator{Roots: roots}, tab)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// run runs rw on lines (sorted by file) and collects everything it
// reports. Without Originals, the lines themselves are the originals
// manifest, read under rw's roots.
func run(t testing.TB, rw Rewriter, lines []manifest.Line) *outcome {
	return runWith(t, rw, lines, lines)
}

// runWith is run with all as the originals manifest when rw has none.
func runWith(t testing.TB, rw Rewriter, lines, all []manifest.Line) *outcome {
	t.Helper()
	return runLogged(t, rw, lines, all, newTestLog())
}

// testLog is a rewrite log in memory, kept across runs like a log file.
type testLog struct {
	buf  bytes.Buffer
	log  *rewritelog.Log
	seen int
}

func newTestLog() *testLog {
	tl := &testLog{}
	tl.log = rewritelog.NewLog(&tl.buf)
	return tl
}

// runLogged is runWith writing to the log tl (whose entries move the
// offsets of originals in files earlier runs replaced).
func runLogged(t testing.TB, rw Rewriter, lines, all []manifest.Line, tl *testLog) *outcome {
	t.Helper()
	o := &outcome{}
	var mu sync.Mutex
	rw.Refused = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		o.refused = append(o.refused, err)
	}
	rw.Warn = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		o.warns = append(o.warns, err)
	}
	log := tl.log
	if rw.Originals == nil {
		rw.Originals = originalsOf(t, all, rw.Roots...)
	}
	o.stats, o.err = rw.Run(context.Background(), manifest.NewReader(bytes.NewReader(manifestText(lines)), "test.manifest"), log)
	o.tl = tl
	o.logText = tl.buf.String()[tl.seen:]
	tl.seen = tl.buf.Len()
	o.log, o.files = parseLog(t, o.logText)
	return o
}

// mustRunWith is runWith that fails the test on an error or a refusal.
func mustRunWith(t testing.TB, rw Rewriter, lines, all []manifest.Line) *outcome {
	t.Helper()
	return mustRunLogged(t, rw, lines, all, newTestLog())
}

// mustRunLogged is runLogged that fails the test on an error or a refusal.
func mustRunLogged(t testing.TB, rw Rewriter, lines, all []manifest.Line, tl *testLog) *outcome {
	t.Helper()
	o := runLogged(t, rw, lines, all, tl)
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	for _, err := range o.refused {
		t.Errorf("refused: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return o
}

// mustRun is run that fails the test on an error or a refusal.
func mustRun(t testing.TB, rw Rewriter, lines []manifest.Line) *outcome {
	t.Helper()
	o := run(t, rw, lines)
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	for _, err := range o.refused {
		t.Errorf("refused: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return o
}

// parseLog reads a run's log text: its entries and its files' fixity
// lines. The entries' File is escaped again, as field 1 of the manifests.
func parseLog(t testing.TB, text string) ([]rewritelog.Entry, []rewritelog.Fixity) {
	t.Helper()
	var files []rewritelog.Fixity
	r := rewritelog.NewReader(strings.NewReader(text), "log")
	r.Fixity = func(f rewritelog.Fixity) error {
		f.File = manifest.EscapeFile(f.File)
		files = append(files, f)
		return nil
	}
	var out []rewritelog.Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, files
		}
		if err != nil {
			t.Fatalf("log: %v", err)
		}
		c := *e
		c.File, c.Run, c.Line = manifest.EscapeFile(c.File), 0, 0
		out = append(out, c)
	}
}

// snapshot reads every file under dir, temporary files included, by path
// relative to dir.
func snapshot(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameFiles reports every difference between two snapshots.
func sameFiles(t testing.TB, what string, got, want map[string][]byte) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: %s is missing", what, name)
		case !bytes.Equal(g, w):
			t.Errorf("%s: %s differs (%d bytes, want %d; first difference at %d)", what, name, len(g), len(w), firstDiff(g, w))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: unexpected file %s", what, name)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// tempFiles lists the files under dir whose name starts with the temporary
// prefix.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), atomicfile.TempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// copyDir copies the regular files under src into dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// warcsumDir hashes every archive under dir as `warcsum -r`.
func warcsumDir(t testing.TB, dir string) []byte {
	t.Helper()
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := warcsum.Runner{Jobs: 2}
	r.OnFileError = func(in warcsum.Input, err error) { t.Errorf("warcsum %s: %v", in.Name, err) }
	var out bytes.Buffer
	if _, err := r.Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// verifyRewrite compares warcsum manifests of a collection before and after
// and fails on any violation.
func verifyRewrite(t testing.TB, before, after []byte) verify.Stats {
	t.Helper()
	st, err := verify.Rewrite(manifest.NewReader(bytes.NewReader(before), "before"),
		manifest.NewReader(bytes.NewReader(after), "after"), func(v string) { t.Errorf("violation: %s", v) })
	if err != nil {
		t.Fatalf("verify.Rewrite: %v", err)
	}
	return st
}

// readRecord reads the one record that data holds (a record as stored: a
// gzip member or plain bytes) and returns its header and block.
func readRecord(data []byte) (*record.Record, []byte, error) {
	rr, err := record.NewReader(bytes.NewReader(data), "record")
	if err != nil {
		return nil, nil, err
	}
	rec, err := rr.Next()
	if err != nil {
		return nil, nil, err
	}
	cp := *rec
	block, err := io.ReadAll(rr)
	if err != nil {
		return nil, nil, err
	}
	if err := rr.Finish(); err != nil {
		return nil, nil, err
	}
	cp.Length = rec.Length
	if _, err := rr.Next(); err != io.EOF {
		return nil, nil, fmt.Errorf("more than one record in %d bytes (%v)", len(data), err)
	}
	return &cp, block, nil
}

// checkRewrittenFile checks the new version of one file against the old
// one and the log entries of the file: everything outside the rewritten
// records is identical and in order, each old stretch is the record its
// line names, and each new stretch is one revisit record of that line.
// lines are the file's copy > 1 lines; shrink maps a line to where it
// stood in old (the same offset on a first run).
func checkRewrittenFile(t testing.TB, name string, old, new []byte, entries []rewritelog.Entry, lines []manifest.Line) {
	t.Helper()
	byOffset := map[int64]manifest.Line{}
	for _, l := range lines {
		byOffset[l.Offset] = l
	}
	var po, pn int64 // ends of the last stretch in old and new
	for _, e := range entries {
		if e.File != name {
			t.Fatalf("%s: log entry of %s", name, e.File)
		}
		if e.OldOffset < po || e.OldOffset+e.OldLength > int64(len(old)) || e.NewOffset+e.NewLength > int64(len(new)) {
			t.Fatalf("%s: log entry %+v out of order or out of the files (%d and %d bytes)", name, e, len(old), len(new))
		}
		if e.NewOffset-pn != e.OldOffset-po {
			t.Errorf("%s: %d bytes kept before old offset %d became %d", name, e.OldOffset-po, e.OldOffset, e.NewOffset-pn)
			return
		}
		if !bytes.Equal(old[po:e.OldOffset], new[pn:e.NewOffset]) {
			t.Errorf("%s: bytes [%d,%d) changed (now at %d)", name, po, e.OldOffset, pn)
		}
		l, ok := byOffset[e.OldOffset]
		if !ok {
			t.Errorf("%s: log entry %+v names no line's record", name, e)
		} else {
			if e.OldLength != l.Length {
				t.Errorf("%s: log entry %+v: old length, want the line's %d", name, e, l.Length)
			}
			checkRevisitOf(t, name, old[e.OldOffset:e.OldOffset+e.OldLength], new[e.NewOffset:e.NewOffset+e.NewLength], &l)
		}
		if e.NewLength >= e.OldLength {
			t.Errorf("%s: log entry %+v: the revisit is not smaller", name, e)
		}
		po, pn = e.OldOffset+e.OldLength, e.NewOffset+e.NewLength
	}
	if !bytes.Equal(old[po:], new[pn:]) {
		t.Errorf("%s: the bytes after the last revisit (old %d, new %d) changed", name, po, pn)
	}
}

// checkRevisitOf checks that rev is one revisit record that replaces the
// response orig as l says.
func checkRevisitOf(t testing.TB, name string, orig, rev []byte, l *manifest.Line) {
	t.Helper()
	o, _, err := readRecord(orig)
	if err != nil {
		t.Errorf("%s offset %d: the old record: %v", name, l.Offset, err)
		return
	}
	r, block, err := readRecord(rev)
	if err != nil {
		t.Errorf("%s offset %d: the revisit does not read as one record: %v", name, l.Offset, err)
		return
	}
	if o.Type != "response" || r.Type != "revisit" {
		t.Errorf("%s offset %d: a %s became a %s", name, l.Offset, o.Type, r.Type)
	}
	if got := manifest.URIField(r); got != l.URI {
		t.Errorf("%s offset %d: revisit URI %q, want %q", name, l.Offset, got, l.URI)
	}
	if got := manifest.DateField(r); got != l.Date {
		t.Errorf("%s offset %d: revisit date %q, want %q", name, l.Offset, got, l.Date)
	}
	// In the manifest's spelling; when the original has the revisit's own
	// URI the header spells it exactly as the record does.
	if got := revisit.RefersURI(r); got != l.RefURI {
		t.Errorf("%s offset %d: WARC-Refers-To-Target-URI %q, want %q", name, l.Offset, got, l.RefURI)
	}
	if raw := r.Header.Get("WARC-Refers-To-Target-URI"); l.RefURI == l.URI && raw != o.TargetURI() {
		t.Errorf("%s offset %d: same-URI revisit refers to %q, want the record's own %q", name, l.Offset, raw, o.TargetURI())
	}
	if got := r.Header.Get("WARC-Refers-To-Date"); got != l.RefDate {
		t.Errorf("%s offset %d: WARC-Refers-To-Date %q, want %q", name, l.Offset, got, l.RefDate)
	}
	if a, b := r.Header.Get("WARC-Record-ID"), o.Header.Get("WARC-Record-ID"); a != b || a == "" {
		t.Errorf("%s offset %d: WARC-Record-ID %q, the response had %q", name, l.Offset, a, b)
	}
	if r.Version != o.Version {
		t.Errorf("%s offset %d: version %q, the response had %q", name, l.Offset, r.Version, o.Version)
	}
	head, err := httpHeadOf(orig)
	if err != nil {
		t.Errorf("%s offset %d: the old record: %v", name, l.Offset, err)
	} else if !bytes.Equal(block, head) {
		t.Errorf("%s offset %d: the revisit's block is not the response's HTTP head:\n%q\nwant\n%q", name, l.Offset, block, head)
	}
}

// httpHeadOf returns the HTTP head of the one response data holds, found
// without the record package's HTTP reader: the block up to the first
// empty line.
func httpHeadOf(data []byte) ([]byte, error) {
	_, block, err := readRecord(data)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(block); {
		j := bytes.IndexByte(block[i:], '\n')
		if j < 0 {
			break
		}
		line := block[i : i+j+1]
		i += j + 1
		if i > j+1 && len(bytes.TrimRight(line, "\r\n")) == 0 {
			return block[:i], nil
		}
	}
	return nil, errors.New("no HTTP head")
}

// withoutRevisits drops the revisit lines of a warcsum manifest.
func withoutRevisits(t testing.TB, m []byte) []byte {
	t.Helper()
	var out []byte
	r := manifest.NewReader(bytes.NewReader(m), "manifest")
	for {
		l, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !l.IsRevisit() {
			out = l.Append(out)
		}
	}
}
