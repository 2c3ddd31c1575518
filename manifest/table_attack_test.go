package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenTableRefusesAPipe proves that a table named by a FIFO (as
// "warcrefs --originals <(sort ...)" names one) is refused when opened:
// its size is 0, so it was read as an empty table and every duplicate was
// refused as if the manifest had no kept line of its class. /dev/null is
// still the empty table it is.
func TestOpenTableRefusesAPipe(t *testing.T) {
	const line = "a.warc 0 100 http://x/ 2024-01-01T00:00:00Z sha1:VIQCHCVLTSXPYXCRRSX35GPZEFC2OW7Z 0 1 - -\n"
	tests := []struct {
		name    string
		make    func(t *testing.T, name string)
		wantErr string // "": opens, with the line
		lines   int64
	}{
		{"regular file", func(t *testing.T, name string) {
			if err := os.WriteFile(name, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "", 1},
		{"/dev/null", func(t *testing.T, name string) {
			if err := os.Symlink(os.DevNull, name); err != nil {
				t.Fatal(err)
			}
		}, "", 0},
		{"FIFO", func(t *testing.T, name string) {
			if err := syscall.Mkfifo(name, 0o600); err != nil {
				t.Fatal(err)
			}
			// A writer that is there before the table opens it (O_RDWR
			// does not wait for a reader), holding the line.
			w, err := os.OpenFile(name, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			if _, err := w.WriteString(line); err != nil {
				t.Fatal(err)
			}
		}, "a pipe, not a file", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "originals")
			tt.make(t, name)
			tab, err := OpenTable(name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("OpenTable: %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tab.Close()
			if tab.lines != tt.lines {
				t.Errorf("%d lines, want %d", tab.lines, tt.lines)
			}
		})
	}
}
