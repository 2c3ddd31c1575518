package workdir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLeftoversRemoved proves that the temporary files a killed run left
// in the work directory are removed when the next run opens it, and only
// then: not while another run holds it.
func TestLeftoversRemoved(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "work")
	w, err := Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	left := []string{".tmp-before.manifest-123", ".tmp-by-file.manifest-sort", "cache/.tmp-0123abcd.lines-42", "tmp/sortAbCdEf", "tmp/pairs"}
	for _, name := range left {
		if err := os.WriteFile(filepath.Join(wd, filepath.FromSlash(name)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept := []string{"before.manifest", "cache/0123abcd.lines"}
	for _, name := range kept {
		if err := os.WriteFile(filepath.Join(wd, filepath.FromSlash(name)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Held by a run: a second opening neither gets it nor cleans it.
	if _, err := Open(wd); err == nil {
		t.Fatal("a second Open got the work directory")
	}
	for _, name := range left[:3] {
		if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(name))); err != nil {
			t.Errorf("%s removed while another run holds the work directory", name)
		}
	}
	// Killed: its lock goes with it (the descriptor is closed), its files stay.
	w.lock.Close()
	w2, err := Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	for _, name := range left {
		if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(name))); err == nil {
			t.Errorf("%s left in the work directory", name)
		}
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(name))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
