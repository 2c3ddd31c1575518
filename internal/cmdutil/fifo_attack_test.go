package cmdutil

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestAbortMarksFIFOOutput proves that a FIFO named with -o (mkfifo p;
// warccollres -o p & warcsumproc -i p), written in place since 568d991,
// ends with IncompleteMark when the command stops, as standard output
// does: its reader, the next stage, does not see the exit status either,
// and took the lines before the stop for the whole manifest.
func TestAbortMarksFIFOOutput(t *testing.T) {
	const line = "a.warc 0 100 http://x/ 2024-01-01T00:00:00Z sha1:VIQCHCVLTSXPYXCRRSX35GPZEFC2OW7Z\n"
	name := filepath.Join(t.TempDir(), "p")
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader that does not wait for the writer, so that the test cannot
	// hang whatever the output does.
	r, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o, err := CreateOutput(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(o, line); err != nil {
		t.Fatal(err)
	}
	o.Abort()
	got, _ := io.ReadAll(r)
	if want := line + IncompleteMark; string(got) != want {
		t.Errorf("the FIFO's reader got %q, want %q", got, want)
	}
}
