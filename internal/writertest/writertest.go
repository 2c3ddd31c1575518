// Package writertest gives tests another process that holds a file open
// for writing, as a crawler writing a WARC under its final name does: the
// writer the in-place replacement must not replace a file under.
package writertest

import (
	"bufio"
	"io"
	"os/exec"
	"testing"
)

// Writer is another process that opens a file for appending and appends
// data when told.
type Writer struct {
	cmd   *exec.Cmd
	tell  io.WriteCloser
	reply *bufio.Reader
}

// Start starts a shell that opens name for appending, says so, and
// appends the file data once a line comes on its input. It returns once
// the file is open (an open that a lease holds waits until it is given
// up).
func Start(t testing.TB, name, data string) *Writer {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 3>>"$1" || exit 1; echo opened; read go; cat "$2" >&3`, "sh", name, data)
	tell, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &Writer{cmd: cmd, tell: tell, reply: bufio.NewReader(out)}
	t.Cleanup(func() { w.tell.Close(); w.cmd.Wait() })
	if line, err := w.reply.ReadString('\n'); err != nil || line != "opened\n" {
		t.Fatalf("the writer did not open %s: %q %v", name, line, err)
	}
	return w
}

// AppendNow makes the writer append its data and waits until it has.
func (w *Writer) AppendNow(t testing.TB) {
	t.Helper()
	io.WriteString(w.tell, "go\n")
	w.tell.Close()
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("the writer: %v", err)
	}
}
