package inplace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/atomicfile"
)

// TestPutRevertedOutcome proves what Put says once it gave the name back
// to the file (Swapped.Revert's outcome): a revert that put the file back
// and removed the new version, and only could not sync the directory
// (atomicfile.ErrNotSynced, as Revert returns last), left the file
// untouched: it is a *DisplacedError (a refusal), never an error wrapping
// ErrNotSynced, which Version.Replace and the WACZ stage take for a
// replacement made (the log would list the new version's offsets, the
// stage the package as rebuilt, for a file that is the old version).
func TestPutRevertedOutcome(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "a.warc"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	target := &Target{File: f, Path: "a.warc"}
	why := fmt.Errorf("%w: run again", ErrReplacedMeanwhile)
	for _, tc := range []struct {
		name      string
		revert    error
		displaced bool // the file untouched, a refusal
		stuck     bool // the run stops
	}{
		{name: "given back", revert: nil, displaced: true},
		{name: "given back, directory not synced", revert: fmt.Errorf("a.warc: %w: %v", atomicfile.ErrNotSynced, errors.New("input/output error")), displaced: true},
		{name: "kept", revert: &atomicfile.KeptError{Name: "a.warc", Path: "dir/a.warc.kept-1", Why: errors.New("written")}, displaced: true},
		{name: "the exchange back failed", revert: errors.New("putting back what a.warc held: input/output error"), stuck: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := target.reverted(why, tc.revert, ".tmp-a.warc-1")
			var displaced *DisplacedError
			var stuck *stuckError
			if got := errors.As(err, &displaced); got != tc.displaced {
				t.Errorf("%v: a *DisplacedError %v, want %v", err, got, tc.displaced)
			}
			if got := errors.As(err, &stuck); got != tc.stuck {
				t.Errorf("%v: a *stuckError %v, want %v", err, got, tc.stuck)
			}
			if errors.Is(err, atomicfile.ErrNotSynced) {
				t.Errorf("%v wraps ErrNotSynced: the caller takes the file for replaced, and it is not", err)
			}
			if tc.displaced && !errors.Is(err, ErrReplacedMeanwhile) {
				t.Errorf("%v does not say why the name was given back", err)
			}
		})
	}
}
