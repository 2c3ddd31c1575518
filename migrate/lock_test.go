package migrate

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"warcdedup/collock"
)

// TestKeepDirsLockedAsMade proves that a conversion given the job's locks
// (Options.Locks, several files at once) holds every directory it makes
// in the keep directory from the moment it makes it to the job's end:
// another job asking for one is refused, and each ARC is kept.
func TestKeepDirsLockedAsMade(t *testing.T) {
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	genCollection(t, filepath.Join(coll, "a", "b"), 4)
	genCollection(t, filepath.Join(coll, "c"), 4)
	keep := filepath.Join(dir, "keep")
	locks, err := LockJob(coll, keep)
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Release()
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: keep, Locks: locks, Jobs: 4}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil || res.Count(Converted) != 8 {
		t.Fatalf("run: %v, %+v", err, res.Files)
	}
	for _, d := range []string{"a", "a/b", "c"} {
		other, err := collock.Lock([]string{filepath.Join(keep, filepath.FromSlash(d))})
		var busy *collock.BusyError
		if !errors.As(err, &busy) {
			other.Release()
			t.Errorf("keep/%s: another job's lock %v, want it refused (the conversion made it and holds it)", d, err)
		}
	}
}
