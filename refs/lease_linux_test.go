package refs

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"testing"
	"warcdedup/atomicfile"
	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/internal/writertest"
	"warcdedup/scripts/gen"
)

// TestRewriteRefusesFileOpenedForWriting proves that a file another
// process opens for writing while its new version is being made is not
// replaced: the writer would go on appending to the old version, which
// the rename takes out of the directory. The file is refused and left as
// it is, and what the writer appends afterwards is in it.
func TestRewriteRefusesFileOpenedForWriting(t *testing.T) {
	c := generate(t, gen.Config{Files: 2, Records: 60, DupRate: 0.5, Seed: 81, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10, gen.WARC11}})
	victim := c.res.Names[1]
	record := filepath.Join(t.TempDir(), "record.warc")
	rec := warctest.Response("http://example.com/later.html", "2024-01-09T00:00:00Z", "fetched while the run worked")
	if err := os.WriteFile(record, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rewritetest.CopyDir(t, c.dir, dir)
	orig := rewritetest.Snapshot(t, dir)
	var w *writertest.Writer
	rw := Rewriter{Roots: []string{dir}, InPlace: true}
	rw.create = func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error) {
		if path.Base(name) == victim && w == nil {
			// A crawler opens the file while its new version is made.
			w = writertest.Start(t, filepath.Join(dir, victim), record)
		}
		return atomicfile.CreateIn(root, name, perm)
	}
	o := run(t, rw, c.lines)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if w == nil {
		t.Fatalf("%s was not rewritten", victim)
	}
	// The writer appends after the run, as wget writes its next record.
	w.AppendNow(t)
	re := o.refusedFor(victim)
	if re == nil || !errors.Is(re, inplace.ErrOpenForWriting) || len(o.refused) != 1 {
		t.Fatalf("refusals %v, want %s refused as open for writing", o.refused, victim)
	}
	after := rewritetest.Snapshot(t, dir)
	if want := append(bytes.Clone(orig[victim]), rec...); !bytes.Equal(after[victim], want) {
		t.Errorf("%s: %d bytes, want its %d and the %d the writer appended", victim, len(after[victim]), len(orig[victim]), len(rec))
	}
	if o.stats.Refused != 1 || o.stats.Rewritten != 1 {
		t.Errorf("stats %+v, want 1 file rewritten and 1 refused", o.stats)
	}
	if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}
