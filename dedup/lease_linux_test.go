package dedup

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
)

// TestRunRefusesFileHeldForWriting proves that a file another process
// holds open for writing, as wget holds the WARC it writes under its
// final name, is never replaced: the run refuses it (exit status 1,
// named), deduplicates the rest, and what the writer appends after the
// run is in the file (a replaced file would have taken it into the old
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
	data := filepath.Join(t.TempDir(), "next.warc")
	os.WriteFile(data, []byte(next), 0o644)

	// The writer: a process that has the file open for appending from
	// before the run until after it, and appends once told.
	cmd := exec.Command("sh", "-c", `exec 3>>"$1" || exit 1; echo opened; read go; cat "$2" >&3`, "sh", held, data)
	tell, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer tell.Close()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "opened\n" {
		t.Fatalf("the writer: %q %v", line, err)
	}

	wd := filepath.Join(t.TempDir(), "work")
	r := run(t, dir, wd)
	io.WriteString(tell, "go\n")
	tell.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the writer: %v", err)
	}

	rep := r.Report
	if rep.Exit != 1 || rep.Totals.FilesRefused != 1 || rep.Totals.RevisitsWritten != 1 ||
		!strings.Contains(strings.Join(rep.ExitReason, "\n"), "b.warc: left untouched: another process has the file open for writing") {
		t.Errorf("exit %d, %d files refused, %d revisits written; want 1, b.warc refused as open for writing, a.warc's revisit:\n%s",
			rep.Exit, rep.Totals.FilesRefused, rep.Totals.RevisitsWritten, strings.Join(rep.ExitReason, "\n"))
	}
	if after, _ := os.ReadFile(held); !bytes.Equal(after, append(before, next...)) {
		t.Errorf("b.warc: %d bytes, want its %d and the %d the writer appended", len(after), len(before), len(next))
	}
}
