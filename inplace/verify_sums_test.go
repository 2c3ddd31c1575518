package inplace

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"warcdedup/fixity"
)

// TestVerifySums proves that the CRC-32 and SHA-256 the check takes of
// a new version for a file Placement.WantSums names (a WACZ member's staged
// copy, which its package's rebuild stores with them unread) are those
// of the new version's bytes as a fresh read finds them, copied
// stretches and records written alike; a file it does not name gets
// neither (its check costs no more than before).
func TestVerifySums(t *testing.T) {
	const source = "AAAABBBBCCCC"
	const content = "AAAAxyCCCC" // BBBB written over by "xy"
	segments := []segment{{newOff: 0, length: 4, srcOff: 0}, {newOff: 4, length: 2, srcOff: 4, written: true, oldLen: 4}, {newOff: 6, length: 4, srcOff: 8}}
	wantSHA := sha256.Sum256([]byte(content))
	wantCRC := crc32.ChecksumIEEE([]byte(content))
	for _, tc := range []struct {
		name  string
		sums  func(string) bool
		taken bool
	}{
		{"named by WantSums", func(n string) bool { return n == "x.wacz#archive/a.warc" }, true},
		{"not named by WantSums", func(n string) bool { return n == "other" }, false},
		{"no WantSums", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, tmp := sourceAndNew(t, []byte(source), []byte(content))
			for _, kind := range sectionKinds {
				v := &Version{Name: "x.wacz#archive/a.warc", Src: f, tmp: tmp, Size: int64(len(source)), segments: segments, pl: &Placement{WantSums: tc.sums}}
				if _, _, err := v.verifyWith(func(int, int64, int64, *os.File) error { return nil }, kind.open); err != nil {
					t.Fatalf("%s: %v", kind.name, err)
				}
				if !tc.taken {
					if v.hasCRC32 || v.sha256 != "" {
						t.Fatalf("%s: sums taken (CRC-32 %v, SHA-256 %q) for a file not asked for", kind.name, v.hasCRC32, v.sha256)
					}
					continue
				}
				if !v.hasCRC32 || v.crc32 != wantCRC || v.sha256 != hex.EncodeToString(wantSHA[:]) {
					t.Fatalf("%s: CRC-32 %08x (taken %v), SHA-256 %s; a fresh read gives %08x, %x", kind.name, v.crc32, v.hasCRC32, v.sha256, wantCRC, wantSHA)
				}
			}
		})
	}
}

// TestVerifyLogsOneSum proves that the new version's sum for the log is
// the SHA-256 when the check takes one anyway (Placement.SHA256, or a
// file WantSums names), with no BLAKE3 beside it, and BLAKE3 otherwise;
// either way the sum a fresh read of the new version gives in the
// algorithm its form names (what undo and recovery check it with).
func TestVerifyLogsOneSum(t *testing.T) {
	const source = "AAAABBBBCCCC"
	const content = "AAAAxyCCCC"
	segments := []segment{{newOff: 0, length: 4, srcOff: 0}, {newOff: 4, length: 2, srcOff: 4, written: true, oldLen: 4}, {newOff: 6, length: 4, srcOff: 8}}
	named := func(n string) bool { return n == "x.wacz#archive/a.warc" }
	for _, tc := range []struct {
		name string
		pl   *Placement
		alg  fixity.Algorithm
	}{
		{"member named by WantSums", &Placement{WantSums: named}, fixity.SHA256},
		{"SHA-256 asked for (crawl index)", &Placement{SHA256: true}, fixity.SHA256},
		{"file not named by WantSums", &Placement{WantSums: func(string) bool { return false }}, fixity.BLAKE3},
		{"no sums asked for", &Placement{}, fixity.BLAKE3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, tmp := sourceAndNew(t, []byte(source), []byte(content))
			v := &Version{Name: "x.wacz#archive/a.warc", Src: f, tmp: tmp, Size: int64(len(source)), segments: segments, pl: tc.pl}
			_, newSum, err := v.verifyWith(func(int, int64, int64, *os.File) error { return nil }, openRead)
			if err != nil {
				t.Fatal(err)
			}
			if alg, ok := fixity.AlgorithmOf(newSum); !ok || alg != tc.alg {
				t.Fatalf("logged sum %q is %v, want %v", newSum, alg, tc.alg)
			}
			h, err := fixity.HashReader(strings.NewReader(content), fixity.Like(newSum)...)
			if err != nil {
				t.Fatal(err)
			}
			if !h.Is(int64(len(content)), newSum) {
				t.Fatalf("logged sum %q; a fresh read gives %s", newSum, h.Like(newSum))
			}
		})
	}
}
