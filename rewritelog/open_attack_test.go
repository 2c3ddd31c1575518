package rewritelog

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenNeedsARegularFile proves that a log named by a link to a device
// (--log /dev/null) or by a FIFO is refused when opened, before any file
// is replaced: it was accepted, the first file was replaced, and the run
// then stopped on syncing the log (exit 2), its entries in the journal.
func TestOpenNeedsARegularFile(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, name string)
	}{
		{"link to /dev/null", func(t *testing.T, name string) {
			if err := os.Symlink(os.DevNull, name); err != nil {
				t.Fatal(err)
			}
		}},
		{"FIFO", func(t *testing.T, name string) {
			if err := syscall.Mkfifo(name, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "rewrite.log")
			tt.make(t, name)
			l, err := Open(name)
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Open: %v, want it to say the log is not a regular file", err)
			}
		})
	}
}
