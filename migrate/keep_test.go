package migrate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"warcdedup/atomicfile"
)

// TestKeptCopyDurableBeforeARCRemoved proves that before an ARC is
// removed every directory its kept copy's path needed was synced: the one
// holding the copy and each one MkdirAll made for it (their entries in
// their parents), and likewise the proof's directories in the work
// directory. Only the last directory was synced: after a power cut the
// copy of a removed ARC could vanish with a directory entry never written.
func TestKeptCopyDurableBeforeARCRemoved(t *testing.T) {
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
			genCollection(t, filepath.Join(coll, "a", "b"), 5)
			keep := filepath.Join(dir, "archive", "keep")
			work := filepath.Join(dir, "work")
			arcs, _, err := Scan(coll)
			if err != nil || len(arcs) == 0 {
				t.Fatalf("scan: %v, %d ARC files", err, len(arcs))
			}
			// Every sync, with which ARC files were still in the
			// collection then.
			var mu sync.Mutex
			synced := map[string][]string{} // ARC -> the directories synced while it was there
			c := &Converter{Options: Options{WorkDir: work, KeepARC: keep}, link: tc.link}
			c.syncDir = func(d string) error {
				mu.Lock()
				defer mu.Unlock()
				for _, in := range arcs {
					if _, err := os.Stat(in.Path); err == nil {
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
				kept := filepath.Join(keep, filepath.FromSlash(in.Name))
				proof := filepath.Join(work, ProofDir, filepath.FromSlash(in.Name)+proofExt)
				var want []string
				for d := filepath.Dir(kept); d != dir; d = filepath.Dir(d) {
					want = append(want, d) // the copy's directory, and each one made, in its parent
				}
				want = append(want, dir)
				// The proof's own directory is synced by its commit.
				for d := filepath.Dir(filepath.Dir(proof)); d != dir; d = filepath.Dir(d) {
					want = append(want, d)
				}
				for _, d := range want {
					if !slices.Contains(synced[in.Name], d) {
						t.Errorf("%s: %s not synced before the ARC was removed (synced: %s)", in.Name, d, strings.Join(synced[in.Name], " "))
					}
				}
			}
		})
	}
}
