package refs

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"warcdedup/rewritelog"
)

// TestRewriterSumsAttack proves, through a whole rewrite, that the
// CRC-32 and SHA-256 a replacement carries for a file Rewriter.WantSums
// names (a WACZ member's staged copy, whose package's rebuild stores it
// with them unread) are those of the file on disk once replaced, and
// that no other replacement claims a CRC-32: a file WantSums does not name,
// any file of a dry run (nothing written, nothing reported), a file
// with SHA256 asked for alone.
func TestRewriterSumsAttack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sha256  bool // Rewriter.SHA256
		dryRun  bool
		sums    func(string) bool
		wantCRC map[string]bool // files whose replacement has a CRC-32
	}{
		{"WantSums names a.warc", false, false, func(n string) bool { return n == "a.warc" }, map[string]bool{"a.warc": true}},
		{"WantSums names both", false, false, func(string) bool { return true }, map[string]bool{"a.warc": true, "b.warc": true}},
		{"SHA256 alone", true, false, nil, map[string]bool{}},
		{"SHA256 and WantSums for b.warc", true, false, func(n string) bool { return n == "b.warc" }, map[string]bool{"b.warc": true}},
		{"dry run, WantSums names both", false, true, func(string) bool { return true }, map[string]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := dupFiles(t, dir, "a.warc", "b.warc")
			var mu sync.Mutex
			got := map[string]rewritelog.Replacement{}
			rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 2, SHA256: tc.sha256, WantSums: tc.sums, DryRun: tc.dryRun,
				Replaced: func(rp rewritelog.Replacement) {
					mu.Lock()
					got[rp.Name] = rp
					mu.Unlock()
				}}
			o := mustRun(t, rw, lines)
			if o.stats.Revisits != 2 {
				t.Fatalf("stats %+v, want 2 revisits", o.stats)
			}
			if tc.dryRun && len(got) > 0 {
				t.Fatalf("a dry run reported replacements: %v", got)
			}
			for _, name := range []string{"a.warc", "b.warc"} {
				rp, ok := got[name]
				if !ok {
					if !tc.dryRun {
						t.Errorf("%s: no replacement reported", name)
					}
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(data)
				if rp.HasCRC32 != tc.wantCRC[name] {
					t.Errorf("%s: CRC-32 taken %v, want %v", name, rp.HasCRC32, tc.wantCRC[name])
				}
				if rp.HasCRC32 && rp.CRC32 != crc32.ChecksumIEEE(data) {
					t.Errorf("%s: CRC-32 %08x, the file has %08x", name, rp.CRC32, crc32.ChecksumIEEE(data))
				}
				if wantSHA := tc.sha256 || tc.wantCRC[name]; (rp.SHA256 != "") != wantSHA {
					t.Errorf("%s: SHA-256 %q, want one: %v", name, rp.SHA256, wantSHA)
				} else if wantSHA && rp.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: SHA-256 %s, the file has %x", name, rp.SHA256, sum)
				}
				if rp.New == nil || rp.New.Size() != int64(len(data)) {
					t.Errorf("%s: new version's info %v, the file has %d bytes", name, rp.New, len(data))
				}
			}
		})
	}
}
