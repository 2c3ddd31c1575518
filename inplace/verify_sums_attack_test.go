package inplace

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"
)

// TestVerifySumsAttackBoundaries proves that the CRC-32 and SHA-256 the
// check takes of a new version (Placement.WantSums: what a WACZ package's
// rebuild then stores a staged member with, unread) are those of a fresh
// read of the whole file when its copied and written stretches meet at
// the check's read chunks (verifyChunk) and map windows (mapWindow), one
// byte either side, and when a copied stretch or a record written spans
// several windows; a byte of the new version that differs from the
// source in a copied stretch at such a boundary is refused, sums untaken.
func TestVerifySumsAttackBoundaries(t *testing.T) {
	const name = "x.wacz#archive/a.warc.gz"
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	// A stretch of the source: copied, or written over by n new bytes.
	type stretch struct {
		srcLen  int
		written bool
		newLen  int
	}
	for _, tc := range []struct {
		name      string
		stretches []stretch
		flip      int // offset in the new version flipped after it is written (-1: none)
	}{
		{"copied up to a chunk boundary, record after", []stretch{{verifyChunk, false, 0}, {300, true, 120}, {verifyChunk - 7, false, 0}}, -1},
		{"record ending one byte past a window", []stretch{{mapWindow - 100, false, 0}, {150, true, 101}, {4096, false, 0}}, -1},
		{"record starting one byte before a window", []stretch{{mapWindow - 1, false, 0}, {10, true, 3 * verifyChunk}, {mapWindow + 1, false, 0}}, -1},
		{"record spanning two windows", []stretch{{1000, false, 0}, {20, true, 2*mapWindow + 17}, {1000, false, 0}}, -1},
		{"copied stretch spanning windows, odd size", []stretch{{3*mapWindow + 5, false, 0}}, -1},
		{"records back to back at a boundary", []stretch{{mapWindow - 50, false, 0}, {60, true, 50}, {40, true, 1}, {verifyChunk, false, 0}}, -1},
		{"byte flipped at a window boundary", []stretch{{2*mapWindow + 9, false, 0}}, mapWindow},
		{"byte flipped just before a window boundary", []stretch{{2*mapWindow + 9, false, 0}}, mapWindow - 1},
		{"byte flipped at a chunk boundary after a record", []stretch{{100, false, 0}, {50, true, 10}, {2 * verifyChunk, false, 0}}, 110 + verifyChunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var source, content []byte
			var segments []segment
			for _, s := range tc.stretches {
				old := random(s.srcLen)
				seg := segment{newOff: int64(len(content)), srcOff: int64(len(source))}
				if s.written {
					seg.written, seg.oldLen, seg.length = true, int64(s.srcLen), int64(s.newLen)
					content = append(content, random(s.newLen)...)
				} else {
					seg.length = int64(s.srcLen)
					content = append(content, old...)
				}
				source = append(source, old...)
				segments = append(segments, seg)
			}
			if tc.flip >= 0 {
				content[tc.flip] ^= 0x40
			}
			wantSHA := sha256.Sum256(content)
			wantCRC := crc32.ChecksumIEEE(content)
			f, tmp := sourceAndNew(t, source, content)
			for _, kind := range sectionKinds {
				v := &Version{Name: name, Src: f, tmp: tmp, Size: int64(len(source)), segments: segments,
					pl: &Placement{WantSums: func(n string) bool { return n == name }}}
				_, _, err := v.verifyWith(func(int, int64, int64, *os.File) error { return nil }, kind.open)
				if tc.flip >= 0 {
					if err == nil {
						t.Fatalf("%s: a byte flipped at %d of a copied stretch passed the check", kind.name, tc.flip)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", kind.name, err)
				}
				if !v.hasCRC32 || v.crc32 != wantCRC || v.sha256 != hex.EncodeToString(wantSHA[:]) {
					t.Fatalf("%s: CRC-32 %08x, SHA-256 %s; a fresh read of the %d bytes gives %08x, %x", kind.name, v.crc32, v.sha256, len(content), wantCRC, wantSHA)
				}
			}
		})
	}
}
