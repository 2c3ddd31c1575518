package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/syssort"
)

// TestDepsCounterSpilled counts the same revisits held in memory and
// spilled (in memory while small, and through the system sort), and
// checks that each writes the same list, WriteDeps's of the whole map.
func TestDepsCounterSpilled(t *testing.T) {
	type add struct {
		file, orig string
		n          int64
	}
	var adds []add
	want := map[[2]string]int64{}
	for i := range 3000 {
		a := add{fmt.Sprintf("f%02d.warc.gz", i%37), fmt.Sprintf("o%03d.warc.gz", (i*7)%101), int64(1 + i%3)}
		adds = append(adds, a)
		want[[2]string{a.file, a.orig}] += a.n
	}
	dir := t.TempDir()
	wantName := filepath.Join(dir, "want.tsv")
	if err := WriteDeps(wantName, want, 5); err != nil {
		t.Fatal(err)
	}
	wantText, _ := os.ReadFile(wantName)
	for _, c := range []struct {
		name     string
		held     int
		inMemory int
	}{
		{"held whole", 0, 0},
		{"spilled, sorted in memory", 10, 0},
		{"spilled, sorted by the system sort", 10, -1},
		{"spilled at every pair", 1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			counts := DepsCounter{Sorter: syssort.Sorter{TempDir: t.TempDir(), InMemory: c.inMemory}, Held: c.held, Unresolved: 5}
			for _, a := range adds {
				if err := counts.Add(a.file, a.orig, a.n); err != nil {
					t.Fatal(err)
				}
			}
			if c.held > 0 && counts.spilled == nil {
				t.Fatal("nothing spilled")
			}
			out := filepath.Join(t.TempDir(), "deps.tsv")
			if err := counts.Write(context.Background(), out); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(out)
			if string(got) != string(wantText) {
				t.Errorf("the list differs from the map's:\n%s\nwant:\n%s", got, wantText)
			}
			if left, _ := os.ReadDir(counts.Sorter.TempDir); len(left) > 0 {
				t.Errorf("left in the temporary directory: %v", left)
			}
		})
	}
}
