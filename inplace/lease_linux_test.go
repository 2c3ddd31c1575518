package inplace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"warcdedup/internal/writertest"
)

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
		w := writertest.Start(t, name, data)
		g := guard(open())
		err := g.check()
		if !errors.Is(err, ErrOpenForWriting) || !strings.Contains(err.Error(), "sh") {
			t.Errorf("check: %v, want ErrOpenForWriting naming the shell", err)
		}
		w.AppendNow(t)
	})
	t.Run("a writer opening it meanwhile", func(t *testing.T) {
		g := guard(open())
		if g.scan {
			t.Skip("no lease on this file system: only writers holding the file open are seen (below)")
		}
		w := writertest.Start(t, name, data) // waits for the guard to give the lease up
		if err := g.check(); !errors.Is(err, ErrOpenForWriting) {
			t.Errorf("check: %v, want ErrOpenForWriting", err)
		}
		w.AppendNow(t)
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
		w := writertest.Start(t, name, data)
		if err := g.check(); !errors.Is(err, ErrOpenForWriting) || !strings.Contains(err.Error(), "sh") {
			t.Errorf("check: %v, want ErrOpenForWriting naming the shell", err)
		}
		w.AppendNow(t)
		if err := g.check(); err != nil {
			t.Errorf("check once the writer is gone: %v", err)
		}
	})
}
