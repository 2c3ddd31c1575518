package dedup

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/workdir"
)

// TestRecordsReadErrorFails proves that a sorted list that cannot be read
// to its end fails the stage, naming the list, instead of ending the merge
// as if the list had ended: a fixity list read short would drop the files
// replaced by earlier runs (their size and SHA-256 before), a revisit list
// read short would leave revisits out of deps.tsv (a file then looks free
// to delete while its originals are still needed).
func TestRecordsReadErrorFails(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("a.warc.gz\t1\t10\tx\t20\ty\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory opens but every read of it fails (EISDIR).
	unreadable := filepath.Join(dir, "unreadable")
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, sorted string
	}{
		{"old fixity list unreadable", unreadable, good},
		{"newer replacements unreadable", "", unreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mergeFixity(tc.old, tc.sorted, filepath.Join(dir, "fixity.tsv"))
			if err == nil || !strings.Contains(err.Error(), unreadable) {
				t.Fatalf("mergeFixity: err %v, want an error naming %s", err, unreadable)
			}
		})
	}

	t.Run("revisit list unreadable", func(t *testing.T) {
		wd, err := workdir.Open(filepath.Join(dir, "wd"))
		if err != nil {
			t.Fatal(err)
		}
		defer wd.Close()
		// A line longer than the scanner's longest (64 MiB) ends its
		// reading with an error, as a failing disk would.
		revisits := filepath.Join(dir, "revisits")
		long := "b.warc.gz 5 http://example.com/ 20200101000000 sha1:" + strings.Repeat("A", 65<<20) + "\n"
		if err := os.WriteFile(revisits, []byte("a.warc.gz 1 http://example.com/ 20200101000000 sha1:X\n"+long), 0o644); err != nil {
			t.Fatal(err)
		}
		l := depsListing{restored: &restoredSince{Log: filepath.Join(dir, "no-log")}}
		w := bufio.NewWriter(new(strings.Builder))
		err = l.unrestored(context.Background(), wd, revisits, w)
		if err == nil || !strings.Contains(err.Error(), revisits) {
			t.Fatalf("unrestored: err %v, want an error naming %s", err, revisits)
		}
	})
}
