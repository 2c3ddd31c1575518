package replaycheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAttack: a sample larger than the revisits checks each once; an
// original's file gone fails every revisit that needs it, each naming its
// own file and offset and the original's file; an index line garbled where
// the original's was fails them too (never a pass).
func TestCheckAttack(t *testing.T) {
	coll, log, index := deduplicated(t)
	all, err := Check(context.Background(), Options{Collection: coll, Log: log, Indexes: []string{index}, Sample: 1 << 20, Seed: 7})
	if err != nil || all.Failed != 0 || int64(all.Sampled) != all.Live || all.Replay != all.Sampled {
		t.Fatalf("a sample larger than the revisits: %v, %d sampled of %d, %d replay", err, all.Sampled, all.Live, all.Replay)
	}
	seen := map[string]bool{}
	for _, r := range all.Revisits {
		k := fmt.Sprintf("%s:%d", r.File, r.Offset)
		if seen[k] {
			t.Fatalf("%s drawn twice", k)
		}
		seen[k] = true
	}
	// The original file of a revisit whose own file is another one.
	var victim *Revisit
	for _, r := range all.Revisits {
		if r.Original.File != r.File && r.Original.Lookup != "own empty payload" {
			victim = r
			break
		}
	}
	if victim == nil {
		t.Fatal("no revisit with its original in another file")
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T) func()
	}{
		{"the original's file gone", func(t *testing.T) func() {
			name := filepath.Join(coll, victim.Original.File)
			if err := os.Rename(name, name+".away"); err != nil {
				t.Fatal(err)
			}
			return func() { os.Rename(name+".away", name) }
		}},
		{"the original's index line garbled", func(t *testing.T) func() {
			data, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
				if strings.Contains(l, fmt.Sprintf(`"offset":"%d"`, victim.Original.Offset)) && strings.Contains(l, `"filename":"`+victim.Original.File+`"`) {
					l = l[:len(l)/2]
				}
				out = append(out, l)
			}
			if err := os.WriteFile(index, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return func() { os.WriteFile(index, data, 0o644) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undo := tc.damage(t)
			defer undo()
			res, err := Check(context.Background(), Options{Collection: coll, Log: log, Indexes: []string{index}})
			if err != nil {
				t.Fatal(err)
			}
			var failed *Revisit
			for _, r := range res.Revisits {
				if r.File == victim.File && r.Offset == victim.Offset {
					failed = r
				}
			}
			if failed == nil || failed.OK || res.Failed == 0 {
				t.Fatalf("the revisit at %s offset %d: %+v", victim.File, victim.Offset, failed)
			}
			want := fmt.Sprintf("%s: offset %d", victim.File, victim.Offset)
			if !strings.Contains(failed.Problem, want) {
				t.Errorf("the problem does not name %q: %s", want, failed.Problem)
			}
			if tc.name == "the original's file gone" && !strings.Contains(failed.Problem, victim.Original.File) {
				t.Errorf("the problem does not name the original's file %s: %s", victim.Original.File, failed.Problem)
			}
		})
	}
}
