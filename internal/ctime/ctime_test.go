package ctime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOfMovesWithAWrite: the change time moves with a write even when the
// modification time is set back, which is why a stamp holds it.
func TestOfMovesWithAWrite(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := stat(t, name)
	old := time.Unix(0, before.ModTime().UnixNano())
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(name, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(name, old, old); err != nil {
		t.Fatal(err)
	}
	after := stat(t, name)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the modification time was not set back: %v, %v", before.ModTime(), after.ModTime())
	}
	if a, b := Of(before.Sys().(*syscall.Stat_t)), Of(after.Sys().(*syscall.Stat_t)); a == b || a == 0 {
		t.Errorf("change time %d before the write and %d after, want it moved", a, b)
	}
}

func stat(t *testing.T, name string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
