package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/revisit"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/verify"
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

// generate writes a collection into a new temporary directory.
func generate(t testing.TB, cfg gen.Config) *coll {
	t.Helper()
	c := rewritetest.Generate(t, cfg)
	return &coll{dir: c.Dir, res: c.Res, all: c.All, dups: c.Dups, arcDups: c.ARCDups, lines: c.Lines}
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
		rw.Originals = rewritetest.Originals(t, all, rw.Roots...)
	}
	o.stats, o.err = rw.Run(context.Background(), manifest.NewReader(bytes.NewReader(rewritetest.ManifestText(lines)), "test.manifest"), log)
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
