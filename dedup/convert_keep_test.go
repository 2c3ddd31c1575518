package dedup

import (
	"context"
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
