package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExchange proves what an exchange leaves: the new content under the
// name and the old file under the temporary name until Finish removes it
// or Revert puts it back (and removes the new content); and that Revert
// leaves alone a file it does not find its new content in.
func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// meddle runs between Exchange and the end; it may rename a file
		// over the temporary name.
		meddle func(t *testing.T, dir, tmp string)
		revert bool
		// inUse is Revert's look for writers of the new content.
		inUse   func(*os.File) error
		want    string // under the name at the end
		wantTmp string // under the temporary name at the end, "" for none
		// wantKept is what a kept new version holds, "" for none kept.
		wantKept string
		wantErr  string
	}{
		{name: "finish", want: "new"},
		{name: "revert", revert: true, want: "old"},
		{name: "revert finds another file", revert: true, want: "old", wantKept: "other", wantErr: "renamed over it",
			meddle: func(t *testing.T, dir, tmp string) {
				// The new content, now under the name, replaced by another file
				// (which revert then swaps to the temporary name).
				if err := os.WriteFile(filepath.Join(dir, "x"), []byte("other"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(dir, "x"), filepath.Join(dir, "a.warc")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "revert keeps a new version written meanwhile", revert: true, want: "old", wantKept: "new, and a writer's record",
			wantErr: "kept as",
			meddle: func(t *testing.T, dir, tmp string) {
				// A writer that opens the name while it holds the new content
				// (its open, waiting for a lease on the old file, interrupted
				// and started again) and appends to it.
				f, err := os.OpenFile(filepath.Join(dir, "a.warc"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				future := time.Now().Add(time.Hour) // the write's own time may equal the new content's
				if _, err := f.WriteString(", and a writer's record"); err != nil {
					t.Fatal(err)
				}
				os.Chtimes(filepath.Join(dir, "a.warc"), future, future)
			}},
		{name: "revert keeps a new version a writer has open", revert: true, want: "old", wantKept: "new",
			inUse:   func(*os.File) error { return errors.New("pid 1 has it open for writing") },
			wantErr: "pid 1 has it open for writing"},
		{name: "revert removes a new version nobody wrote", revert: true, want: "old",
			inUse: func(*os.File) error { return nil }},
	} {
		for _, rooted := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " (root)"}[rooted], func(t *testing.T) {
				dir := t.TempDir()
				name := filepath.Join(dir, "a.warc")
				if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				var f *File
				var err error
				if rooted {
					root, rerr := os.OpenRoot(dir)
					if rerr != nil {
						t.Fatal(rerr)
					}
					defer root.Close()
					f, err = CreateIn(root, "a.warc", 0o644)
				} else {
					f, err = Create(name, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString("new")
				tmp := filepath.Join(dir, filepath.Base(f.tmp))
				sw, err := f.Exchange()
				if errors.Is(err, ErrExchangeUnsupported) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(name); string(b) != "new" {
					t.Errorf("after Exchange the name holds %q, want the new content", b)
				}
				if old, err := sw.Old(); err != nil || old.Size() != 3 {
					t.Errorf("Old: %v %v, want the old file", old, err)
				}
				if b, _ := os.ReadFile(tmp); string(b) != "old" {
					t.Errorf("after Exchange the temporary name holds %q, want the old file", b)
				}
				if tc.meddle != nil {
					tc.meddle(t, dir, tmp)
				}
				if tc.revert {
					err = sw.Revert(tc.inUse)
				} else {
					err = sw.Finish()
				}
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				endErr := err
				f.Abort() // does nothing after Exchange
				if b, _ := os.ReadFile(name); string(b) != tc.want {
					t.Errorf("the name holds %q, want %q", b, tc.want)
				}
				b, err := os.ReadFile(tmp)
				if tc.wantTmp == "" && !errors.Is(err, os.ErrNotExist) || tc.wantTmp != "" && string(b) != tc.wantTmp {
					t.Errorf("the temporary name holds %q (%v), want %q", b, err, tc.wantTmp)
				}
				kept, _ := filepath.Glob(name + KeptSuffix + "*")
				var ke *KeptError
				switch {
				case tc.wantKept == "" && len(kept) > 0:
					t.Errorf("kept %v, want nothing kept", kept)
				case tc.wantKept != "" && len(kept) != 1:
					t.Errorf("kept %v, want one file holding %q", kept, tc.wantKept)
				case tc.wantKept != "":
					if b, _ := os.ReadFile(kept[0]); string(b) != tc.wantKept {
						t.Errorf("kept %s holds %q, want %q", kept[0], b, tc.wantKept)
					}
					if !errors.As(endErr, &ke) || filepath.Base(ke.Path) != filepath.Base(kept[0]) {
						t.Errorf("error %v, want a *KeptError naming %s", endErr, kept[0])
					}
				}
			})
		}
	}
}

// TestExchangeWithNoFile proves that an exchange with a name that does not
// exist fails as a failed Commit does: the temporary file removed, nothing
// under the name.
func TestExchangeWithNoFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.warc")
	f, err := Create(name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Exchange(); err == nil || errors.Is(err, ErrExchangeUnsupported) {
		t.Skipf("Exchange: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %v", entries)
	}
}

// TestFinishNotRemovedIsReplaced: an exchange whose old version cannot be
// removed afterwards has replaced the file all the same, and Finish says
// so as a Commit whose directory sync failed does (ErrNotSynced), not as
// a failure: a caller taking it for one would count the file as left as
// it was and forget the new version's log entries.
func TestFinishNotRemovedIsReplaced(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.warc")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	tmp := f.tmp
	sw, err := f.Exchange()
	if errors.Is(err, ErrExchangeUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// What the temporary name holds cannot be removed: a directory with
	// a file in it.
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = sw.Finish()
	if !errors.Is(err, ErrNotSynced) || !strings.Contains(err.Error(), "could not be removed") {
		t.Errorf("Finish: %v, want ErrNotSynced saying the old version could not be removed", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" {
		t.Errorf("the name holds %q, want the new content", b)
	}
}
