package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRevertCrashLeavesWriterNamed proves that a process killed (SIGKILL,
// a crash) while Revert looks at a new version it gave the name back to
// leaves that version under a name the next run keeps. A writer that
// opened the name while the new version held it goes on writing through
// its descriptor after the kill; the next run removes every temporary
// name of the file (RemoveLeftovers, and the log's journal recovery), so
// while the new version is only under its temporary name, what the writer
// wrote, and writes later, is lost. The look (inUse, the lease attempt or
// the /proc scan, milliseconds without leases) is where the kill is
// simulated: what a kill then leaves is what is on disk at that moment.
func TestRevertCrashLeavesWriterNamed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// inUse is the look, after the simulated kill's check.
		inUse func(*os.File) error
		// wantKept: Revert itself keeps the new version (no kill).
		wantKept bool
	}{
		{name: "kill while a writer holding it open is found", wantKept: true,
			inUse: func(*os.File) error { return errors.New("pid 1 has it open for writing") }},
		{name: "kill while nobody is found", inUse: func(*os.File) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			sw, err := f.Exchange()
			if errors.Is(err, ErrExchangeUnsupported) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			// The writer: its open found the new version under the name.
			w, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			killedNow := func(f *os.File) error {
				// What a kill at this instant leaves for the next run: every
				// name of the directory but the temporary ones it removes.
				entries, _ := os.ReadDir(dir)
				named := false
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), TempPrefix) {
						continue
					}
					fi, err := os.Stat(filepath.Join(dir, e.Name()))
					if err != nil {
						continue
					}
					if nf, err := f.Stat(); err == nil && os.SameFile(fi, nf) {
						named = true
					}
				}
				if !named {
					t.Errorf("a kill while Revert looks for writers leaves the new version, which a writer holds open, only under its temporary name, which the next run removes with all the writer writes")
				}
				return tc.inUse(f)
			}
			err = sw.Revert(killedNow)
			var ke *KeptError
			if errors.As(err, &ke) != tc.wantKept {
				t.Fatalf("Revert: %v, kept %v", err, tc.wantKept)
			}
			if !tc.wantKept && err != nil {
				t.Fatalf("Revert: %v", err)
			}
			kept, _ := filepath.Glob(name + KeptSuffix + "*")
			if tc.wantKept && len(kept) != 1 || !tc.wantKept && len(kept) != 0 {
				t.Errorf("kept %v, want %v", kept, tc.wantKept)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*")); len(leftovers) != 0 {
				t.Errorf("temporary names left: %v", leftovers)
			}
			if b, _ := os.ReadFile(name); string(b) != "old" {
				t.Errorf("the name holds %q, want the old file", b)
			}
		})
	}
}

// TestRevertKeepsFileRenamedOver proves that a file another process
// renamed over the name while the new version held it (rsync, a repair
// tool), which Revert's exchange then takes from the name, is not left
// under the temporary name only: the next run removes every temporary
// name of the file (RemoveLeftovers), and the other process's file with
// it.
func TestRevertKeepsFileRenamedOver(t *testing.T) {
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
	sw, err := f.Exchange()
	if errors.Is(err, ErrExchangeUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "incoming")
	if err := os.WriteFile(other, []byte("the other process's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, name); err != nil {
		t.Fatal(err)
	}
	err = sw.Revert(func(*os.File) error { return nil })
	if err == nil {
		t.Fatal("Revert: no error, with another file than the new version taken from the name")
	}
	RemoveLeftovers(name) // the next run
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(b) == "the other process's file" {
			if !strings.Contains(err.Error(), e.Name()) {
				t.Errorf("Revert: %v, which does not name %s, where the other process's file is", err, e.Name())
			}
			return
		}
	}
	t.Errorf("Revert: %v; the file another process renamed over the name is lost by the next run", err)
}
