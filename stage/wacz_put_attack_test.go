package stage

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/inplace"
)

// TestPackagePutLookSeesSameTickRewrite proves what the look at a
// package's new version given the name back (inplace.Target.Put, whose
// revert removes it if the look finds nothing) must find: a process that
// opened the name while the new version held it, rewrote it at the same
// size and closed it within the file system's timestamp tick left its
// size and modification time as written, and is gone by the look: only
// the bytes tell, and a look for writers alone (the package's put had
// none) let the revert remove what it wrote, as review3 found for WARC
// files.
func TestPackagePutLookSeesSameTickRewrite(t *testing.T) {
	written := []byte("PK\x03\x04 the package's new version")
	for _, tc := range []struct {
		name    string
		content []byte
		wantErr string // "" for a new version that may be removed
	}{
		{name: "untouched", content: written},
		{name: "rewritten, same size, same tick", content: []byte("PK\x03\x04 another process's bytes.."), wantErr: "not those written"},
		{name: "cut short within the tick", content: written[:10], wantErr: "not those written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.content) == len(written) && tc.wantErr != "" && string(tc.content) == string(written) {
				t.Fatal("the case rewrites nothing")
			}
			name := filepath.Join(t.TempDir(), "a.wacz")
			if err := os.WriteFile(name, written, 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(name, time.Time{}, fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = inplace.Unwritten(unwrittenPackage(int64(len(written)), crc32.ChecksumIEEE(written)))(f)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("the look says %v, want %q", err, tc.wantErr)
			}
		})
	}
}
