package rewritelog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/internal/tmpfstest"
)

// TestFullDiskTmpfs is TestFullDiskKeepsJournal on a real full disk: the
// log and its journal on a tmpfs of 64 kB, filled up, so that the block
// of a file crosses into a page the file system no longer has and is
// written in part (ENOSPC). The file system freed, the next open leaves
// the log whole.
func TestFullDiskTmpfs(t *testing.T) {
	dir := tmpfstest.Mount(t, "64k")
	logName := filepath.Join(dir, "rewrite.log")
	files := t.TempDir()
	a := newJournalFile(t, files, "a.warc", 300)
	b := newJournalFile(t, files, "b.warc", 400)
	inA, inB := a.change(0, 1), b.change(0, 1)
	run := len("# run 1970-01-01T00:00:04Z\n")
	blockB := len(inB.header()) + len(inB.Entries[0].AppendTo(nil)) + 1
	// Comments, so that b's block ends 40 bytes before the log's first
	// page does: a's block needs a second one.
	pad := 4096 - 40 - run - blockB
	padding := strings.Repeat("# "+strings.Repeat("-", 97)+"\n", pad/100) + "#" + strings.Repeat(" ", pad%100-2) + "\n"
	if err := os.WriteFile(logName, []byte(padding), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(logName)
	if err != nil {
		t.Fatal(err)
	}
	l.StartRun(time.Unix(4, 0))
	replaceLogged(t, l, b, 0, 1)
	if l.Size() != 4096-40 {
		t.Fatalf("the log has %d bytes, want %d", l.Size(), 4096-40)
	}
	// The disk fills up.
	ballast, err := os.Create(filepath.Join(dir, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := ballast.Write(make([]byte, 4096)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	ballast.Close()
	if err := l.Journal(inA); err != nil {
		t.Fatalf("journaling a.warc (within the journal's page): %v", err)
	}
	a.put(t, 1)
	if err := l.Append(inA); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("logging a.warc on the full disk: %v, want ENOSPC", err)
	} else {
		t.Logf("logging a.warc: %v", err)
	}
	if fi, err := os.Stat(logName); err != nil || fi.Size() != 4096-40 {
		t.Errorf("after the failed write the log has %d bytes (%v), want the %d before it", fi.Size(), err, 4096-40)
	}
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "is kept") {
		t.Errorf("Close on the full disk: %v, want the journal kept", err)
	}
	if _, err := os.Stat(logName + ".pending"); err != nil {
		t.Fatalf("the journal is gone after the full disk: %v", err)
	}
	// Still full: the open fails and keeps the journal.
	if l, err = Open(logName); err == nil {
		l.Close()
		t.Fatal("the log opened on a full disk, with a's entries still to add")
	} else if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("opening on the full disk: %v, want ENOSPC", err)
	} else {
		t.Logf("opening on the full disk: %v", err)
	}
	if _, err := os.Stat(logName + ".pending"); err != nil {
		t.Fatalf("the journal is gone after an open on the full disk: %v", err)
	}
	os.Remove(filepath.Join(dir, "ballast"))
	if l, err = Open(logName); err != nil {
		t.Fatalf("reopening with room: %v", err)
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
	if _, err := os.Stat(logName + ".pending"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal is left once the log is whole: %v", err)
	}
}
