package wacz

import (
	"crypto/sha256"
	"hash/crc32"
	"testing"
)

// TestRebuildGivenSumsAttack gives a rebuild (its index from known
// lines) sums that do not describe the replacement in the ways
// TestRebuildGivenSums leaves out: a CRC-32 not the file's with its
// SHA-256 right, a size larger or smaller than the file's, each copied
// by the kernel and here. Whatever the write lets through, the check of
// what was written must not pass a package whose datapackage.json or
// headers name other bytes than the member holds.
func TestRebuildGivenSumsAttack(t *testing.T) {
	data := testWARC()
	const member = sumsMember
	offsets := responseOffsets(t, data)
	rw := revisitsOf(t, data, JoinName("x.wacz", member), offsets[1], offsets[2])
	good := sha256.Sum256(rw.data)
	size, crc := int64(len(rw.data)), crc32.ChecksumIEEE(rw.data)
	for _, tc := range []struct {
		name     string
		copyHere bool
		sum      FileSum
		pass     bool // the file's own sums: the control, written and checked
	}{
		{"the file's sums, copied by the kernel (control)", false, FileSum{size, crc, good[:]}, true},
		{"the file's sums, copied here (control)", true, FileSum{size, crc, good[:]}, true},
		{"a CRC-32 not the file's, copied by the kernel", false, FileSum{size, crc ^ 1, good[:]}, false},
		{"a CRC-32 not the file's, copied here", true, FileSum{size, crc ^ 1, good[:]}, false},
		{"a size one larger, copied by the kernel", false, FileSum{size + 1, crc, good[:]}, false},
		{"a size one larger, copied here", true, FileSum{size + 1, crc, good[:]}, false},
		{"a size one smaller, copied here", true, FileSum{size - 1, crc, good[:]}, false},
		{"a size of zero, copied by the kernel", false, FileSum{0, 0, good[:]}, false},
		{"a size of zero, copied here", true, FileSum{0, 0, good[:]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, res, err := rebuildWithSums(t, data, rw, tc.sum, tc.copyHere, nil)
			if tc.pass && err != nil {
				t.Fatal(err)
			}
			if err != nil {
				return // refused by the write
			}
			if res.IndexedMembers {
				t.Fatal("the index read the members: the known lines were not used, the test proves nothing")
			}
			np, err := NewPackage(out, res.Size, "new.wacz")
			if tc.pass && err != nil {
				t.Fatal(err)
			}
			if err != nil {
				return // a package that does not read back is not put in place
			}
			rep, err := Check(np, CheckOptions{Written: res})
			if tc.pass {
				if err != nil || rep.Err() != nil || rep.CRC32 != res.CRC32 || rep.Size != res.Size {
					t.Fatalf("the control failed: %v %v (read back %d bytes %08x, written %d %08x)", err, rep.Err(), rep.Size, rep.CRC32, res.Size, res.CRC32)
				}
				return
			}
			if err != nil {
				return
			}
			if rep.Err() == nil && rep.CRC32 == res.CRC32 && rep.Size == res.Size {
				t.Fatalf("sums %+v not the file's (%d bytes, CRC-32 %08x) passed the write and the check of what was written", tc.sum, size, crc)
			}
		})
	}
}
