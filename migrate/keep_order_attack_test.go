package migrate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"warcdedup/atomicfile"
)

// TestKeptCopySyncedAfterItsLink proves the order TestKeptCopyDurable-
// BeforeARCRemoved cannot: the kept copy's directory is synced after the
// copy has its name there and before the ARC is removed. That test counts
// every sync made while the ARC exists, so a sync made before the copy was
// linked (whose directory entry it does not hold) passed it too.
func TestKeptCopySyncedAfterItsLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		link func(oldname, newname string) error
	}{
		{"hard link", os.Link},
		{"copy across file systems", func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			genCollection(t, filepath.Join(coll, "a"), 5)
			keep := filepath.Join(dir, "keep")
			arcs, _, err := Scan(coll)
			if err != nil || len(arcs) == 0 {
				t.Fatalf("scan: %v, %d ARC files", err, len(arcs))
			}
			var mu sync.Mutex
			synced := map[string][]string{} // ARC -> the directories synced while both it and its kept copy were there
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: keep}, link: tc.link}
			c.syncDir = func(d string) error {
				mu.Lock()
				defer mu.Unlock()
				for _, in := range arcs {
					_, errARC := os.Stat(in.Path)
					_, errKept := os.Stat(filepath.Join(keep, filepath.FromSlash(in.Name)))
					if errARC == nil && errKept == nil {
						synced[in.Name] = append(synced[in.Name], d)
					}
				}
				return atomicfile.SyncDir(d)
			}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil || res.Count(Converted) != len(arcs) {
				t.Fatalf("run: %v, %+v", err, res.Files)
			}
			for _, in := range arcs {
				if d := filepath.Dir(filepath.Join(keep, filepath.FromSlash(in.Name))); !slices.Contains(synced[in.Name], d) {
					t.Errorf("%s: its kept copy's directory %s was not synced between the copy's link and the ARC's removal (synced then: %v)", in.Name, d, synced[in.Name])
				}
			}
		})
	}
}
