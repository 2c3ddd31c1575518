package cmdutil

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCreateOutputKeepsSpecialFiles proves that an output named by a FIFO
// or by a link to a device (as "-o /dev/stdout" or "--stats /dev/null"
// are) is written into, not replaced by a regular file renamed over the
// name: run as root, that rename replaced /dev/null or /dev/full for the
// whole machine, and a reader of a FIFO waited for ever while the bytes
// went to a file nobody reads.
func TestCreateOutputKeepsSpecialFiles(t *testing.T) {
	tests := []struct {
		name string
		// make creates the output's name in dir and returns what reads
		// what was written to it (nil: nothing to read back).
		make func(t *testing.T, name string) io.Reader
		mode os.FileMode // the type name keeps (os.Lstat)
	}{
		{"FIFO", func(t *testing.T, name string) io.Reader {
			if err := syscall.Mkfifo(name, 0o600); err != nil {
				t.Fatal(err)
			}
			// A reader that does not wait for the writer, so that the
			// test cannot hang whatever the output does.
			r, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		}, os.ModeNamedPipe},
		{"link to /dev/null", func(t *testing.T, name string) io.Reader {
			if err := os.Symlink(os.DevNull, name); err != nil {
				t.Fatal(err)
			}
			return nil
		}, os.ModeSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "out")
			r := tt.make(t, name)
			o, err := CreateOutput(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(o, "line\n"); err != nil {
				t.Fatal(err)
			}
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(name)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != tt.mode {
				t.Fatalf("%s is now %v, want it left a %v", name, fi.Mode().Type(), tt.mode)
			}
			if r != nil {
				got, _ := io.ReadAll(r)
				if string(got) != "line\n" {
					t.Errorf("the reader got %q, want %q", got, "line\n")
				}
			}
		})
	}
}
