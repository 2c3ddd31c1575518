package refs

import (
	"testing"
	"time"

	"warcdedup/rewritelog"
)

// TestReplacementOverlapsNextWalk holds the first file's replacement
// (its Replaced, called from inside the file's check and replacement,
// once the new version is in place) until the second file's walk has
// written its revisit: with one walk at a time (Jobs 1), the next file is
// walked while the one before is still being checked and put in place.
// When a worker walked, checked and replaced a file before it took the
// next, the second walk could not start, and the wait ran out.
func TestReplacementOverlapsNextWalk(t *testing.T) {
	dir := t.TempDir()
	lines := dupFiles(t, dir, "a.warc", "b.warc")
	var prog Progress
	overlapped := make(chan bool, 1)
	rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 1, Progress: &prog,
		Replaced: func(rp rewritelog.Replacement) {
			if rp.Name != "a.warc" {
				return
			}
			for deadline := time.Now().Add(20 * time.Second); prog.Revisits.Load() < 2 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			overlapped <- prog.Revisits.Load() >= 2
		}}
	o := mustRun(t, rw, lines)
	if o.stats.Revisits != 2 || o.stats.Rewritten != 2 {
		t.Fatalf("stats %+v, want 2 files rewritten, 2 revisits", o.stats)
	}
	select {
	case ok := <-overlapped:
		if !ok {
			t.Error("b.warc's walk did not write its revisit while a.warc was being put in place")
		}
	default:
		t.Error("a.warc's replacement was not reported")
	}
}
