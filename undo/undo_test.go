package undo

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/workdir"
)

// TestUndo runs the job and undoes it, first one file, then the rest of
// the collection: every file comes back as it was (uncompressed, byte for
// byte), a second undo has nothing to do, and a run after it deduplicates
// the collection again as the first did.
func TestUndo(t *testing.T) {
	dir, _ := jobtest.Generated(t, jobtest.GenCfg)
	before := jobtest.HashUncompressed(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	written := r.Report.Totals.RevisitsWritten
	deduplicated := jobtest.HashTree(t, dir)
	fixity := jobtest.ReadLines(t, filepath.Join(wd, workdir.FixityFile))[1:]
	one := filepath.Join(dir, strings.Fields(fixity[0])[0])

	u1, err := Run(context.Background(), Options{Paths: []string{one}, WorkDir: wd, Jobs: 2})
	if err != nil || u1.Exit != 0 || u1.Stats.Restored != 1 {
		t.Fatalf("undo %s: %v, %+v", one, err, u1)
	}
	// The work directory is found beside the collection; here it is not.
	if _, err := Run(context.Background(), Options{Paths: []string{dir}}); err == nil || !strings.Contains(err.Error(), "no work directory") {
		t.Errorf("undo without a work directory beside the collection: %v", err)
	}
	u2, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u2.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u2)
	}
	if got := u1.Stats.Records + u2.Stats.Records; got != written || u2.Stats.Restored != int64(len(fixity))-1 {
		t.Errorf("restored %d records in %d+%d files; the run wrote %d revisits in %d files", got, u1.Stats.Restored, u2.Stats.Restored, written, len(fixity))
	}
	jobtest.SameTree(t, "after undo (uncompressed)", jobtest.HashUncompressed(t, dir), before)
	if fx := jobtest.ReadLines(t, filepath.Join(wd, workdir.UndoFixityFile)); int64(len(fx)-1) != u2.Stats.Restored {
		t.Errorf("undo-fixity.tsv has %d lines for %d files", len(fx)-1, u2.Stats.Restored)
	}

	u3, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd})
	if err != nil || !u3.NothingToDo {
		t.Errorf("a second undo: %v, nothing to do %v", err, u3.NothingToDo)
	}
	again, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.NothingToDo || again.Report.Totals.RevisitsWritten != written {
		t.Errorf("a run after undo: %v, nothing to do %v, %d revisits written, the first run %d", err, again.NothingToDo, again.Report.Totals.RevisitsWritten, written)
	}
	for _, st := range again.Report.Stages {
		if st.Skipped {
			t.Errorf("a run after undo skipped %s as done before: the files changed since", st.Name)
		}
	}
	jobtest.SameTree(t, "deduplicated again after undo", jobtest.HashTree(t, dir), deduplicated)
}
