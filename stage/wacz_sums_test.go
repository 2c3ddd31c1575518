package stage

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"warcdedup/rewritelog"
)

// TestReplacementSums proves that the sums the rewrite's check took of a
// staged member's new version reach its package's rebuild only while
// the staged file is the version checked: another version (written over
// since, or another file renamed there), a member not staged here, or a
// replacement without a CRC-32 gives the rebuild none, and it reads the
// file for them.
func TestReplacementSums(t *testing.T) {
	const name = "x.wacz#archive/a.warc.gz"
	content := []byte("the new version of the member")
	sum := sha256.Sum256(content)
	for _, tc := range []struct {
		name  string
		rp    func(rp rewritelog.Replacement) rewritelog.Replacement
		after func(t *testing.T, path string) // before the rebuild looks
		given bool
	}{
		{"the version checked", nil, nil, true},
		{"written over since, same size", nil, func(t *testing.T, path string) {
			if err := os.Chtimes(path, time1, time1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another file renamed there", nil, func(t *testing.T, path string) {
			tmp := path + ".other"
			if err := os.WriteFile(tmp, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a member not staged here", func(rp rewritelog.Replacement) rewritelog.Replacement {
			rp.Name = "x.wacz#archive/b.warc.gz"
			return rp
		}, nil, false},
		{"no CRC-32 taken", func(rp rewritelog.Replacement) rewritelog.Replacement {
			rp.HasCRC32 = false
			return rp
		}, nil, false},
		{"a SHA-256 not of 32 bytes", func(rp rewritelog.Replacement) rewritelog.Replacement {
			rp.SHA256 = rp.SHA256[:62]
			return rp
		}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "staged")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			pr := &PackageRewrite{staged: map[string]*stagedMember{name: {path: path}}}
			if !pr.WantSums(name) || pr.WantSums("x.wacz#archive/b.warc.gz") {
				t.Fatal("WantSums asks for the sums of other files than the members staged")
			}
			rp := rewritelog.Replacement{Name: name, Path: path, New: fi, SHA256: hex.EncodeToString(sum[:]), CRC32: crc32.ChecksumIEEE(content), HasCRC32: true}
			if tc.rp != nil {
				rp = tc.rp(rp)
			}
			pr.Replaced(rp)
			if tc.after != nil {
				tc.after(t, path)
			}
			now, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			r := pr.replacementOf("x.wacz", "archive/a.warc.gz", path, now)
			if r.Path != path {
				t.Fatalf("replacement %s, want %s", r.Path, path)
			}
			if (r.Sum != nil) != tc.given {
				t.Fatalf("sums given: %v, want %v", r.Sum != nil, tc.given)
			}
			if r.Sum != nil && (r.Sum.Size != int64(len(content)) || r.Sum.CRC32 != crc32.ChecksumIEEE(content) || string(r.Sum.SHA256) != string(sum[:])) {
				t.Fatalf("sums %+v, not the file's", *r.Sum)
			}
		})
	}
}

// time1 is a modification time no file written now has.
var time1 = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
