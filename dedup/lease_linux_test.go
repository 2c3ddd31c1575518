package dedup

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"warcdedup/internal/progress"
	"warcdedup/internal/warctest"
	"warcdedup/stage"
)

// appender is another process that holds a file open for appending, as
// wget holds the WARC it writes under its final name, and appends a
// record each time it is told.
type appender struct {
	cmd   *exec.Cmd
	tell  io.WriteCloser
	reply *bufio.Reader
}

func startAppender(t *testing.T, name, record string) *appender {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 3>>"$1" || exit 1; echo opened; while read go; do cat "$2" >&3; echo appended; done`, "sh", name, record)
	tell, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &appender{cmd: cmd, tell: tell, reply: bufio.NewReader(out)}
	t.Cleanup(func() { a.tell.Close(); a.cmd.Wait() })
	if line, err := a.reply.ReadString('\n'); err != nil || line != "opened\n" {
		t.Fatalf("the writer: %q %v", line, err)
	}
	return a
}

// append makes the process append its record and waits until it has.
func (a *appender) append() error {
	if _, err := io.WriteString(a.tell, "go\n"); err != nil {
		return err
	}
	line, err := a.reply.ReadString('\n')
	if err == nil && line != "appended\n" {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// TestRunRefusesFileHeldForWriting proves that a file another process
// holds open for writing is never replaced: the run refuses it (exit
// status 1, named), deduplicates the rest, and what the writer appends
// while the run works and after it is all in the file (a replaced file
// would have taken what it appends after the rename into the old
// version, which no name leads to).
func TestRunRefusesFileHeldForWriting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	warctest.WriteFile(t, dir, "a.warc", twoCaptures("http://example.com/logo.png"))
	held := warctest.WriteFile(t, dir, "b.warc", twoCaptures("http://example.com/b.png"))
	before, err := os.ReadFile(held)
	if err != nil {
		t.Fatal(err)
	}
	next := warctest.Response("http://example.com/next.html", "2024-01-03T00:00:00Z", "the writer's next record")
	record := filepath.Join(t.TempDir(), "next.warc")
	os.WriteFile(record, []byte(next), 0o644)
	w := startAppender(t, held, record)

	// It appends once the run has hashed the collection and begins to
	// rewrite, and once the run is over.
	var once sync.Once
	var during error
	show := progress.NewPlain(writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), stage.RewriteName+": started") {
			once.Do(func() { during = w.append() })
		}
		return len(p), nil
	}), "warcdedup")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2, Display: show})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.append(); err != nil || during != nil {
		t.Fatalf("the writer: %v, during the run %v", err, during)
	}

	rep := r.Report
	if rep.Exit != 1 || rep.Totals.FilesRefused != 1 || rep.Totals.RevisitsWritten != 1 ||
		!strings.Contains(strings.Join(rep.ExitReason, "\n"), "b.warc: left untouched: another process has the file open for writing") {
		t.Errorf("exit %d, %d files refused, %d revisits written; want 1, b.warc refused as open for writing, a.warc's revisit:\n%s",
			rep.Exit, rep.Totals.FilesRefused, rep.Totals.RevisitsWritten, strings.Join(rep.ExitReason, "\n"))
	}
	if after, _ := os.ReadFile(held); !bytes.Equal(after, append(before, next+next...)) {
		t.Errorf("b.warc: %d bytes, want its %d and the 2 x %d the writer appended", len(after), len(before), len(next))
	}
}
