package dedup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"warcdedup/collock"
)

// TestConvertKeepDirLocked proves that run --convert-arc locks its
// --keep-arc directory as it locks the collection: while another job
// holds the keep directory itself the run is refused naming it before it
// converts anything (the collection and the keep directory as they
// were); the directories beneath it are locked only as the conversion
// first uses them (a keep directory shared across years of collections
// would take a descriptor each), so that an ARC whose directory of the
// keep directory another job holds, there before the run or made and
// locked by that job once the run works, is left in the collection,
// reported, not put in that job's directory; and a directory the run
// does not use, held by another job, keeps nothing from being kept. Two
// jobs keeping ARC files of the same names at once would find, or remove
// as a killed run's leftover, each other's copies.
func TestConvertKeepDirLocked(t *testing.T) {
	cases := []struct {
		name      string
		held      string // beneath the keep directory ("." for itself), held before the run
		madeLater bool   // held made and locked by another job once the run has locked
		refused   bool   // the run refused before it converts anything
		leftInSub bool   // the ARC in sub left in the collection (its keep directory held)
	}{
		{"the keep directory held", ".", false, true, false},
		{"a directory beneath the keep directory held", "sub", false, false, true},
		{"a directory made in the keep directory and held once the run locked", "sub", true, false, true},
		{"a directory of the keep directory the run does not use held", "other", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			coll, _ := generated(t, keptCfg)
			arcs := arcNames(t, coll)
			// One ARC in a subdirectory: it is kept in keep/sub.
			inSub := filepath.Join("sub", filepath.Base(arcs[0]))
			if err := os.MkdirAll(filepath.Join(coll, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(coll, arcs[0]), filepath.Join(coll, inSub)); err != nil {
				t.Fatal(err)
			}
			arcs = arcNames(t, coll)
			dir := t.TempDir()
			wd, keep := filepath.Join(dir, "work"), filepath.Join(dir, "keep")
			held := filepath.Join(keep, c.held)
			var other *collock.Set
			defer func() { other.Release() }()
			hold := func() {
				if err := os.MkdirAll(held, 0o755); err != nil {
					t.Error(err)
					return
				}
				var err error
				if other, err = collock.Lock([]string{held}); err != nil {
					t.Error(err)
				}
			}
			opt := Options{Collections: []string{coll}, WorkDir: wd, Jobs: 1, ConvertOptions: ConvertOptions{ConvertARC: true, KeepARC: keep}}
			if c.madeLater {
				var once sync.Once
				opt.ConvertHook = func(step, arc string) { once.Do(hold) }
			} else {
				hold()
			}
			before, keptBefore := hashTree(t, coll), hashTree(t, keep)
			res, err := Run(context.Background(), opt)
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), filepath.Clean(held)+": another warcdedup job is working on this directory's files") {
					t.Fatalf("run with %s held: %v, want it refused naming %s", c.held, err, held)
				}
				sameTree(t, "the collection after the refused run", hashTree(t, coll), before)
				sameTree(t, "the keep directory after the refused run", hashTree(t, keep), keptBefore)
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !c.leftInSub {
				if left := arcNames(t, coll); len(left) != 0 || res.Report.Exit != 0 {
					t.Errorf("ARC files left: %v, exit status %d; want none, 0 (%s, held, is not used)", left, res.Report.Exit, c.held)
				}
				return
			}
			if left := arcNames(t, coll); !slices.Equal(left, []string{inSub}) {
				t.Errorf("ARC files left: %v, want %s alone (its keep directory held by another job)", left, inSub)
			}
			if got := hashTree(t, held); len(got) != 0 {
				t.Errorf("put in the directory another job holds: %v", got)
			}
			if res.Report.Exit == 0 {
				t.Errorf("exit status 0 with %s left", inSub)
			}
			if !strings.Contains(strings.Join(res.Report.ExitReason, "\n")+strings.Join(res.Report.Conversion.Why, "\n"), "another warcdedup job") {
				t.Errorf("the report does not say another job holds %s: %v %v", held, res.Report.ExitReason, res.Report.Conversion.Why)
			}
		})
	}
}
