package rewritelog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// journalFile is a file of a log test: its versions' bytes, by number.
type journalFile struct {
	name     string
	path     string
	versions [][]byte
}

// newJournalFile writes version 0 of a file: size bytes, and version 1
// (the same with the record at 10 turned into 10 bytes), and returns it.
func newJournalFile(t *testing.T, dir, name string, size int) *journalFile {
	t.Helper()
	v0 := bytes.Repeat([]byte{'0' + byte(len(name)%10)}, size)
	copy(v0, name)
	v1 := append(append(append([]byte(nil), v0[:10]...), "revisit..."...), v0[100:]...)
	f := &journalFile{name: name, path: filepath.Join(dir, name), versions: [][]byte{v0, v1}}
	f.put(t, 0)
	return f
}

// put makes version i the file's bytes, as a rename would.
func (f *journalFile) put(t *testing.T, i int) {
	t.Helper()
	tmp := f.path + ".new"
	if err := os.WriteFile(tmp, f.versions[i], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// change is the replacement of version from by version to, and its entry:
// a rewrite (0 to 1) turns the 90-byte record at 10 into a 10-byte
// revisit, an undo (1 to 0) restores it.
func (f *journalFile) change(from, to int) *Intent {
	in := &Intent{Path: f.path, Fixity: Fixity{File: f.name,
		OldSize: int64(len(f.versions[from])), OldSum: sha256Hex(f.versions[from]),
		NewSize: int64(len(f.versions[to])), NewSum: sha256Hex(f.versions[to])}}
	e := Entry{File: f.name, OldOffset: 10, OldLength: 90, NewOffset: 10, NewLength: 10, Kind: Revisit,
		PayloadDigest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", RefersToURI: "http://example.com/", RefersTo: "2024-01-01T00:00:00Z"}
	if to == 0 {
		e = Entry{File: f.name, OldOffset: 10, OldLength: 10, NewOffset: 10, NewLength: 90, Kind: Restored}
	}
	in.Entries = []Entry{e}
	return in
}

// replaceLogged replaces version from of f by version to as a run does:
// journaled, renamed, logged.
func replaceLogged(t *testing.T, l *Log, f *journalFile, from, to int) {
	t.Helper()
	in := f.change(from, to)
	if err := l.Journal(in); err != nil {
		t.Fatal(err)
	}
	f.put(t, to)
	if err := l.Append(in); err != nil {
		t.Fatal(err)
	}
}

// crash leaves the log as a killed process does: its files closed, the
// journal where it is.
func crash(l *Log) {
	if l.journal != nil {
		l.journal.close()
	}
	l.file.Close()
}

// logBlocks reads the log file and returns, per file, the "# file" lines
// of its blocks in order, and fails the test if the log does not read.
func logBlocks(t *testing.T, name string) map[string][]Fixity {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string][]Fixity{}
	r := NewReader(f, name)
	r.Fixity = func(fx Fixity) error {
		blocks[fx.File] = append(blocks[fx.File], fx)
		return nil
	}
	for {
		_, err := r.Next()
		if err == io.EOF {
			return blocks
		}
		if err != nil {
			t.Fatalf("the log does not read: %v", err)
		}
	}
}

// TestRecoverAfterRunUndoRun is issue 20 item 1: a collection
// deduplicated, undone, and deduplicated again, the second run killed
// between a file's rename and its log entries. The new version is byte for
// byte the first run's, so its "# file" line is already in the log, from
// the first run: recovery must still log the second run's entries, or the
// log says the file is restored while it holds revisits again.
func TestRecoverAfterRunUndoRun(t *testing.T) {
	dir := t.TempDir()
	logName := filepath.Join(dir, "rewrite.log")
	a := newJournalFile(t, dir, "a.warc", 300)
	b := newJournalFile(t, dir, "b.warc", 400)

	for i, step := range []struct{ from, to int }{{0, 1}, {1, 0}} { // run, undo
		l, err := Open(logName)
		if err != nil {
			t.Fatal(err)
		}
		l.StartRun(time.Unix(int64(i), 0))
		replaceLogged(t, l, a, step.from, step.to)
		replaceLogged(t, l, b, step.from, step.to)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The second run: b is logged, a renamed but not logged yet (the
	// run logs its files in order, b waits for a's turn... here, a was
	// renamed last), and the kill.
	l, err := Open(logName)
	if err != nil {
		t.Fatal(err)
	}
	l.StartRun(time.Unix(2, 0))
	replaceLogged(t, l, b, 0, 1)
	if err := l.Journal(a.change(0, 1)); err != nil {
		t.Fatal(err)
	}
	a.put(t, 1)
	crash(l)

	if l, err = Open(logName); err != nil {
		t.Fatalf("recovering: %v", err)
	}
	l.Close()
	blocks := logBlocks(t, logName)
	for _, f := range []*journalFile{a, b} {
		got := blocks[f.name]
		if len(got) != 3 {
			t.Errorf("%s: %d blocks in the log, want 3 (run, undo, run again)", f.name, len(got))
			continue
		}
		if last := got[2]; last.NewSum != sha256Hex(f.versions[1]) || last.OldSum != sha256Hex(f.versions[0]) {
			t.Errorf("%s: the last block is %+v, want the second run's", f.name, last)
		}
	}
	if _, err := os.Stat(logName + ".pending"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal is left after recovery: %v", err)
	}
}

// fullDisk writes room bytes to w and then fails as a full disk does: the
// write that crosses the limit is cut short.
type fullDisk struct {
	w    io.Writer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) <= d.room {
		d.room -= len(p)
		return d.w.Write(p)
	}
	n, err := d.w.Write(p[:d.room])
	d.room -= n
	if err == nil {
		err = &os.PathError{Op: "write", Path: "rewrite.log", Err: syscall.ENOSPC}
	}
	return n, err
}

// TestFullDiskKeepsJournal is issue 20 item 5: the disk fills while a
// replaced file's entries are appended to the log. The log may keep part
// of the block; the journal, which holds the whole entries, must stay
// until they are in the log, and the next open must leave the log whole:
// every replaced file's block once, complete, and no partial one.
func TestFullDiskKeepsJournal(t *testing.T) {
	a0 := newJournalFile(t, t.TempDir(), "a.warc", 300)
	in := a0.change(0, 1)
	header := len(in.header())
	block := header + len(in.Entries[0].AppendTo(nil)) + 1
	for _, room := range []int{0, 7, header, header + 5, block - 1} {
		t.Run(fmt.Sprintf("room for %d bytes", room), func(t *testing.T) {
			dir := t.TempDir()
			logName := filepath.Join(dir, "rewrite.log")
			a := newJournalFile(t, dir, "a.warc", 300)
			b := newJournalFile(t, dir, "b.warc", 400)
			l, err := Open(logName)
			if err != nil {
				t.Fatal(err)
			}
			l.StartRun(time.Unix(3, 0))
			replaceLogged(t, l, b, 0, 1) // b's block goes in whole
			// a is renamed; its entries meet a full disk.
			in := a.change(0, 1)
			if err := l.Journal(in); err != nil {
				t.Fatal(err)
			}
			a.put(t, 1)
			l.w = &fullDisk{w: l.file, room: room}
			if err := l.Append(in); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("commit on a full disk: %v, want ENOSPC", err)
			}
			l.Close()
			if _, err := os.Stat(logName + ".pending"); err != nil {
				t.Fatalf("the journal is gone after the full disk: %v", err)
			}
			// Room again: the next open completes the log.
			if l, err = Open(logName); err != nil {
				t.Fatalf("reopening: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			blocks := logBlocks(t, logName)
			for _, f := range []*journalFile{a, b} {
				if got := blocks[f.name]; len(got) != 1 || got[0].NewSum != sha256Hex(f.versions[1]) {
					t.Errorf("%s: blocks %+v, want its one replacement", f.name, got)
				}
			}
			data, _ := os.ReadFile(logName)
			if n := strings.Count(string(data), "a.warc 10 90 10 10 revisit"); n != 1 {
				t.Errorf("a.warc's entry is %d times in the log, want once:\n%s", n, data)
			}
			if _, err := os.Stat(logName + ".pending"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the journal is left once the log is whole: %v", err)
			}
		})
	}
}

// TestLogRefusals: what Open and Move refuse. A log another process has
// open; a log shorter than when it was last left whole (its entries cut);
// a journal begun when the log was longer than it is; and offsets moved
// through a block whose entries are missing.
func TestLogRefusals(t *testing.T) {
	dir := t.TempDir()
	a := newJournalFile(t, dir, "a.warc", 300)
	logName := filepath.Join(dir, "rewrite.log")
	l, err := Open(logName)
	if err != nil {
		t.Fatal(err)
	}
	l.StartRun(time.Unix(5, 0))
	replaceLogged(t, l, a, 0, 1)
	if other, err := Open(logName); err == nil || !strings.Contains(err.Error(), "another process has the rewrite log open") {
		if other != nil {
			other.Close()
		}
		t.Errorf("a second Open: %v, want it refused", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(logName)
	if err != nil {
		t.Fatal(err)
	}

	// Cut at a line boundary: the last entry gone.
	cut := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	os.WriteFile(logName, whole[:cut], 0o644)
	var se *ShortError
	if _, err := Open(logName); !errors.As(err, &se) {
		t.Errorf("Open of a cut log: %v, want a *ShortError", err)
	}

	// The same without its size record: the block is incomplete, and
	// offsets do not move through it.
	os.Remove(EndFile(logName))
	if l, err = Open(logName); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Move("a.warc", 200); err == nil || !strings.Contains(err.Error(), "entries are missing") {
		t.Errorf("Move through an incomplete block: %v", err)
	}
	l.Since(l.Size())
	if off, err := l.Move("a.warc", 200); err != nil || off != 200 {
		t.Errorf("Move from after the incomplete block: %d, %v", off, err)
	}
	l.Close()

	// A journal begun when the log was longer.
	os.WriteFile(logName, whole[:cut], 0o644)
	os.Remove(EndFile(logName))
	os.WriteFile(logName+".pending", fmt.Appendf(nil, "# journal %d\n", len(whole)), 0o644)
	if _, err := Open(logName); err == nil || !strings.Contains(err.Error(), "entries are lost") {
		t.Errorf("Open with a journal begun beyond the log's end: %v", err)
	}
}
