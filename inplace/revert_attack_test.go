package inplace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/fixity"
)

// TestRevertLookSeesSameTickRewrite proves what put's look at a new
// version it gave the name back to (Swapped.Revert's inUse) must find for
// the new version to be removed: nobody writing it and its bytes those
// checked. A process that opened the name while the new version held it,
// rewrote its bytes without changing its size (cp over it, a repair
// tool) and closed it, all within the timestamp tick of the new version's
// last write (a jiffy on Linux before 6.13's fine-grained timestamps,
// coarser on other file systems), leaves its size and modification time
// as they were and is no longer there to be found open: only the bytes
// tell, and without looking at them the revert removes what it wrote.
func TestRevertLookSeesSameTickRewrite(t *testing.T) {
	const written = "WARC/1.0 the new version"
	for _, tc := range []struct {
		name    string
		content string
		wantErr string // "" for a new version that may be removed
	}{
		{name: "untouched", content: written},
		{name: "rewritten, same size, same tick", content: "WARC/1.0 another process", wantErr: "not those written"},
		{name: "cut short and written again within the tick", content: "WARC/1.0 the new", wantErr: "not those written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "a.warc")
			if err := os.WriteFile(name, []byte(written), 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := fixity.HashFile(name)
			if err != nil {
				t.Fatal(err)
			}
			sum := h.Sum(fixity.Default)
			fi, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			// The same tick: the file system gave the write the time the
			// new version had.
			if err := os.Chtimes(name, time.Time{}, fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = unwrittenSince(int64(len(written)), sum)(f)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("the look says %v, want %q", err, tc.wantErr)
			}
		})
	}
}
