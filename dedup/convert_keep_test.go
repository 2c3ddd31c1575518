package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/scripts/gen"
)

// keptCfg is a small all-ARC collection.
var keptCfg = gen.Config{Files: 3, Records: 30, DupRate: 0.3, Seed: 7, Formats: []gen.Format{gen.ARCGz, gen.ARC}}

// TestConvertKeepARCRecorded proves a job's --keep-arc is part of what it
// recorded: a resumed run --convert-arc with another keep directory, or
// none, is refused before anything is converted, where it removed the ARC
// files the first run was asked to keep; the same keep directory resumes
// and keeps them all.
func TestConvertKeepARCRecorded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resume func(keep, other string) string // the resumed run's --keep-arc
	}{
		{"no --keep-arc", func(keep, other string) string { return "" }},
		{"another --keep-arc", func(keep, other string) string { return other }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll, _ := generated(t, keptCfg)
			arcs := arcNames(t, coll)
			orig := hashTree(t, coll)
			dir := t.TempDir()
			wd, keep, other := filepath.Join(dir, "work"), filepath.Join(dir, "keep"), filepath.Join(dir, "other")
			opt := func(keep string) Options {
				return Options{Collections: []string{coll}, WorkDir: wd, ConvertOptions: ConvertOptions{ConvertARC: true, KeepARC: keep}}
			}
			// The first run stops once it has kept one ARC.
			ctx, cancel := context.WithCancel(context.Background())
			first := opt(keep)
			first.ConvertHook = func(step, arc string) {
				if step == "removed" {
					cancel()
				}
			}
			if _, err := Run(ctx, first); err == nil {
				t.Fatal("the stopped run returned no error")
			}
			left := arcNames(t, coll)
			if len(left) == 0 || len(left) == len(arcs) {
				t.Fatalf("the stopped run left %d of %d ARC files", len(left), len(arcs))
			}
			tree := hashTree(t, coll)
			_, err := Run(context.Background(), opt(tc.resume(keep, other)))
			if err == nil || !strings.Contains(err.Error(), "--keep-arc "+keep) {
				t.Errorf("resumed with --keep-arc %q: %v, want a refusal naming --keep-arc %s", tc.resume(keep, other), err, keep)
			}
			sameTree(t, "after the refused resume", hashTree(t, coll), tree)
			if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused resume made %s (%v): it locks the keep directory only once it is the one recorded", other, err)
			}
			// The run as it was asked keeps every ARC.
			if _, err := Run(context.Background(), opt(keep)); err != nil {
				t.Fatalf("resumed with the same --keep-arc: %v", err)
			}
			for _, a := range arcs {
				if got := hashTree(t, keep)[filepath.ToSlash(a)]; got != orig[filepath.ToSlash(a)] {
					t.Errorf("%s: kept %q, want %s", a, got, orig[filepath.ToSlash(a)])
				}
			}
		})
	}
}

// TestConvertKeepFailureRetried proves an ARC that could not be kept (its
// name in the keep directory taken by another file) is kept by a rerun of
// the same run --convert-arc once the cause is gone: the job had
// completed, and every rerun said "nothing to do" with the ARC and its
// WARC both in the collection.
func TestConvertKeepFailureRetried(t *testing.T) {
	// No duplicates: a refusal in the rewrite would make the rerun a new
	// job anyway.
	coll, _ := generated(t, gen.Config{Files: 3, Records: 30, Seed: 7, Formats: []gen.Format{gen.ARCGz, gen.ARC}})
	arcs := arcNames(t, coll)
	orig := hashTree(t, coll)
	dir := t.TempDir()
	wd, keep := filepath.Join(dir, "work"), filepath.Join(dir, "keep")
	blocker := filepath.Join(keep, arcs[0])
	if err := os.MkdirAll(filepath.Dir(blocker), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocker, []byte("another file"), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := Options{Collections: []string{coll}, WorkDir: wd, ConvertOptions: ConvertOptions{ConvertARC: true, KeepARC: keep}}
	res, err := Run(context.Background(), opt)
	if err != nil || res.Report.Exit == 0 {
		t.Fatalf("first run: %v, exit %d, want exit 1 naming %s", err, res.Report.Exit, arcs[0])
	}
	if left := arcNames(t, coll); len(left) != 1 || left[0] != arcs[0] {
		t.Fatalf("ARC files left: %v, want %s", left, arcs[0])
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	res, err = Run(context.Background(), opt)
	if err != nil || res.NothingToDo || res.Report.Exit != 0 {
		t.Fatalf("rerun: %v, nothing to do %v, exit %d %v", err, res != nil && res.NothingToDo, res.Report.Exit, res.Report.ExitReason)
	}
	if left := arcNames(t, coll); len(left) != 0 {
		t.Errorf("ARC files left after the rerun: %v", left)
	}
	if got := hashTree(t, keep)[filepath.ToSlash(arcs[0])]; got != orig[filepath.ToSlash(arcs[0])] {
		t.Errorf("%s: kept %q, want %s", arcs[0], got, orig[filepath.ToSlash(arcs[0])])
	}
}
