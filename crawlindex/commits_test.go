package crawlindex

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitRecordsTellRollback proves that an index set back to an
// older generation whose later generations are gone (which then verifies
// as it is: whole, only older) is refused by Open, Commit and Compact,
// each problem naming the crawl whose commit or removal the index lost
// and saying what to do; that a lost compaction (the generation before
// holds the same crawls) is no loss; and that an index whose records a
// warcdedup before them never wrote gets them at its next commit.
func TestCommitRecordsTellRollback(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, dir, work string) // after twoCrawls
		lose   []string                             // generations lost
		back   string                               // CURRENT then
		want   string                               // "": no loss, the index opens
	}{
		{name: "a commit's generation lost", lose: []string{"gen-000002"}, back: "gen-000001",
			want: "crawl feb was committed in generation 2, but CURRENT names generation 1, which does not hold it"},
		{name: "a removal's generation lost", back: "gen-000002", lose: []string{"gen-000003"},
			change: func(t *testing.T, dir, work string) {
				if _, err := Commit(dir, Change{Remove: "feb"}); err != nil {
					t.Fatal(err)
				}
			},
			want: "crawl feb was removed in generation 3, but CURRENT names generation 2, which still holds it"},
		{name: "a compaction's generation lost: the one before holds the same, accepted", back: "gen-000003", lose: []string{"gen-000004"},
			change: func(t *testing.T, dir, work string) {
				mar := originals(t, work, "mar", digestOf('D', 6))
				if _, err := CommitWith(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar"}, Originals: mar}, CommitOptions{NoCompact: true}); err != nil {
					t.Fatal(err)
				}
				if _, _, err := Compact(dir, CompactOptions{Full: true}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "records a warcdedup before them did not write, written by the next commit", back: "gen-000002", lose: []string{"gen-000003"},
			change: func(t *testing.T, dir, work string) {
				if err := os.RemoveAll(filepath.Join(dir, commitsDir)); err != nil {
					t.Fatal(err)
				}
				if _, err := Open(dir); err != nil {
					t.Fatalf("an index without records: %v", err)
				}
				if _, err := Commit(dir, Change{Remove: "feb"}); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"jan", "feb"} {
					if _, err := os.Stat(filepath.Join(dir, commitsDir, k+".json")); err != nil {
						t.Errorf("no record of %s after the next commit: %v", k, err)
					}
				}
			},
			want: "crawl feb was removed in generation 3, but CURRENT names generation 2, which still holds it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, work := twoCrawls(t)
			if _, err := Open(dir); err != nil {
				t.Fatalf("the index before: %v", err)
			}
			if tt.change != nil {
				tt.change(t, dir, work)
			}
			if _, err := Open(dir); err != nil {
				t.Fatalf("the index after the change: %v", err)
			}
			// The generation CURRENT goes back to is kept by the
			// commits after it (a run may still read it).
			if _, err := os.Stat(filepath.Join(dir, tt.back)); err != nil {
				t.Fatal(err)
			}
			for _, g := range tt.lose {
				if err := os.RemoveAll(filepath.Join(dir, g)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, currentFile), []byte(tt.back+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Open: %v, want the index as it is", err)
				}
				return
			}
			var damage *DamageError
			if !errors.As(err, &damage) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "from a backup") {
				t.Fatalf("Open: %v\nwant a refusal: %s ..., and what to do", err, tt.want)
			}
			apr := originals(t, work, "apr", digestOf('E', 7))
			if _, err := Commit(dir, Change{Add: &Crawl{Name: "apr", Location: "/data/apr"}, Originals: apr}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Commit: %v, want a refusal", err)
			}
			if _, _, err := Compact(dir, CompactOptions{Full: true}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compact: %v, want a refusal", err)
			}
			if now, _ := os.ReadFile(filepath.Join(dir, currentFile)); string(now) != tt.back+"\n" {
				t.Errorf("CURRENT moved to %q", now)
			}
		})
	}
}
