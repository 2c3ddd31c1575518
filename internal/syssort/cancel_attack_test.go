package syssort

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCancelledSortLeavesNoTemporaryFiles proves that a sort stopped by its
// context (an interrupted warcsumcmp, warccdx or run) removes its
// temporary files: it was killed, and its chunks, as large as its input,
// stayed in the temporary directory (a work directory, or /tmp) after
// every interrupted command.
func TestCancelledSortLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	s := Sorter{TempDir: dir, Memory: "1M", InMemory: -1}
	f, err := s.Create("cancel")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Remove()
	// 16 MB of lines in reverse order: sort spills them in chunks, and
	// then blocks writing its output, which nobody reads.
	for i := 400000; i > 0; i-- {
		if err := f.Line(fmt.Appendf(nil, "%09d %s", i, strings.Repeat("x", 30))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines, err := s.Sorted(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until sort has a temporary file of its own (a chunk); the
	// deadline only keeps a broken sort from hanging the test.
	for deadline := time.Now().Add(time.Minute); len(sortFiles(t, dir)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("sort wrote no temporary file in a minute")
		}
	}
	cancel()
	lines.Close()
	f.Remove()
	if left := sortFiles(t, dir); len(left) > 0 {
		t.Errorf("the stopped sort left %d temporary files: %v", len(left), left)
	}
}

// sortFiles lists the files sort made in dir (not the File's own).
func sortFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			names = append(names, e.Name())
		}
	}
	return names
}
