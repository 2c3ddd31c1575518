package refs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/internal/warctest"
	"warcdedup/scripts/gen"
)

// writer is another process that opens a file for appending, as a crawler
// writing a WARC under its final name does, and appends data when told.
type writer struct {
	cmd   *exec.Cmd
	tell  io.WriteCloser
	reply *bufio.Reader
}

// startWriter starts a shell that opens name for appending, says so, and
// appends the file data once a line comes on its input. It returns once
// the file is open (an open that a lease holds waits until it is given
// up).
func startWriter(t *testing.T, name, data string) *writer {
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
	w := &writer{cmd: cmd, tell: tell, reply: bufio.NewReader(out)}
	t.Cleanup(func() { w.tell.Close(); w.cmd.Wait() })
	if line, err := w.reply.ReadString('\n'); err != nil || line != "opened\n" {
		t.Fatalf("the writer did not open %s: %q %v", name, line, err)
	}
	return w
}

// appendNow makes the writer append its data and waits until it has.
func (w *writer) appendNow(t *testing.T) {
	t.Helper()
	io.WriteString(w.tell, "go\n")
	w.tell.Close()
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("the writer: %v", err)
	}
}

// TestRewriteRefusesFileOpenedForWriting proves that a file another
// process opens for writing while its new version is being made is not
// replaced: the writer would go on appending to the old version, which
// the rename takes out of the directory. The file is refused and left as
// it is, and what the writer appends afterwards is in it.
func TestRewriteRefusesFileOpenedForWriting(t *testing.T) {
	c := generate(t, gen.Config{Files: 2, Records: 60, DupRate: 0.5, Seed: 81, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10, gen.WARC11}})
	victim := c.res.Names[1]
	record := filepath.Join(t.TempDir(), "record.warc")
	rec := warctest.Response("http://example.com/later.html", "2024-01-09T00:00:00Z", "fetched while the run worked")
	if err := os.WriteFile(record, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyDir(t, c.dir, dir)
	orig := snapshot(t, dir)
	var w *writer
	rw := Rewriter{Roots: []string{dir}, InPlace: true}
	rw.create = func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error) {
		if path.Base(name) == victim && w == nil {
			// A crawler opens the file while its new version is made.
			w = startWriter(t, filepath.Join(dir, victim), record)
		}
		return atomicfile.CreateIn(root, name, perm)
	}
	o := run(t, rw, c.lines)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if w == nil {
		t.Fatalf("%s was not rewritten", victim)
	}
	// The writer appends after the run, as wget writes its next record.
	w.appendNow(t)
	re := o.refusedFor(victim)
	if re == nil || !errors.Is(re, ErrOpenForWriting) || len(o.refused) != 1 {
		t.Fatalf("refusals %v, want %s refused as open for writing", o.refused, victim)
	}
	after := snapshot(t, dir)
	if want := append(bytes.Clone(orig[victim]), rec...); !bytes.Equal(after[victim], want) {
		t.Errorf("%s: %d bytes, want its %d and the %d the writer appended", victim, len(after[victim]), len(orig[victim]), len(rec))
	}
	if o.stats.Refused != 1 || o.stats.Rewritten != 1 {
		t.Errorf("stats %+v, want 1 file rewritten and 1 refused", o.stats)
	}
	if tf := tempFiles(t, dir); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}

// TestWriterGuard proves what the guard finds: a writer that held the file
// open before it started, one that opens it while it is held, none when
// only readers (this process's own among them) have it open; and what the
// look in /proc finds where there is no lease.
func TestWriterGuard(t *testing.T) {
	name := filepath.Join(t.TempDir(), "a.warc")
	if err := os.WriteFile(name, []byte("WARC"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	os.WriteFile(data, []byte("more"), 0o644)
	open := func() *os.File {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	guard := func(f *os.File) *writerGuard {
		g, err := guardWriters(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.release)
		return g
	}

	t.Run("readers only", func(t *testing.T) {
		open() // another reader, of this process
		g := guard(open())
		if err := g.check(); err != nil {
			t.Errorf("check: %v", err)
		}
		if g.scan {
			t.Skip("no lease on this file system")
		}
	})
	t.Run("a writer holding it open", func(t *testing.T) {
		w := startWriter(t, name, data)
		g := guard(open())
		err := g.check()
		if !errors.Is(err, ErrOpenForWriting) || !strings.Contains(err.Error(), "sh") {
			t.Errorf("check: %v, want ErrOpenForWriting naming the shell", err)
		}
		w.appendNow(t)
	})
	t.Run("a writer opening it meanwhile", func(t *testing.T) {
		g := guard(open())
		if g.scan {
			t.Skip("no lease on this file system: only writers holding the file open are seen (below)")
		}
		w := startWriter(t, name, data) // waits for the guard to give the lease up
		if err := g.check(); !errors.Is(err, ErrOpenForWriting) {
			t.Errorf("check: %v, want ErrOpenForWriting", err)
		}
		w.appendNow(t)
		if err := g.check(); !errors.Is(err, ErrOpenForWriting) {
			t.Errorf("check once the writer is gone: %v, want ErrOpenForWriting still", err)
		}
	})
	t.Run("no lease: /proc", func(t *testing.T) {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		g := &writerGuard{f: open(), scan: true, info: fi}
		if err := g.check(); err != nil {
			t.Errorf("check with no writer: %v", err)
		}
		w := startWriter(t, name, data)
		if err := g.check(); !errors.Is(err, ErrOpenForWriting) || !strings.Contains(err.Error(), "sh") {
			t.Errorf("check: %v, want ErrOpenForWriting naming the shell", err)
		}
		w.appendNow(t)
		if err := g.check(); err != nil {
			t.Errorf("check once the writer is gone: %v", err)
		}
	})
}
