package wacz

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWrittenFindsCopiedMemberWithCRCKept: a replacement copied in
// by the kernel is read twice, once for its size, CRC-32 and SHA-256
// (what datapackage.json gets), once by the copy. A change between the
// two that keeps its size and its CRC-32 (a byte flipped and four
// others set to make the CRC-32 come out the same, which anyone can
// compute) is not found by the CRC-32 the check of what was written
// compares: the package would be put in place with a datapackage.json
// whose SHA-256 is not that of the member it holds. The check of a
// package written must find it, as the copy through memory did (its
// SHA-256 was of the bytes written); unchanged, it passes.
func TestCheckWrittenFindsCopiedMemberWithCRCKept(t *testing.T) {
	members := validMembers(t)
	old, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	offsets := responseOffsets(t, warc)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1], offsets[2])
	const member = "archive/data.warc.gz"
	for _, tc := range []struct {
		name   string
		change bool
	}{
		{"unchanged", false},
		{"changed with its size and CRC-32 kept", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTemp(t, dir, "data.warc.gz", rw.data)
			b := &Rebuild{Source: old, Replace: map[string]Replacement{member: {Path: path}}, FreshIndex: true,
				NoPackageSHA256: true, Now: rebuildTime, TempDir: dir}
			if tc.change {
				b.beforeCopy = func(name string) {
					if name != member {
						return
					}
					forged := keepCRC(t, rw.data, len(rw.data)/2, len(rw.data)/2+8)
					if err := os.WriteFile(path, forged, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, res, err := rebuildInto(t, b, dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, copied := res.CopiedFrom[member]; !copied {
				t.Fatal("not copied by the kernel: the test proves nothing")
			}
			np, err := NewPackage(out, res.Size, "new.wacz")
			if err != nil {
				t.Fatal(err)
			}
			// What the package holds against what datapackage.json says.
			held := storedBytes(t, out, np, member)
			heldSum := sha256.Sum256(held)
			mismatch := !bytes.Equal(heldSum[:], res.MemberSHA256[member])
			if mismatch != tc.change {
				t.Fatalf("member's bytes other than datapackage.json's SHA-256: %v, want %v", mismatch, tc.change)
			}
			rep, err := Check(np, CheckOptions{Written: res})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.change {
				if err := rep.Err(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if rep.Err() == nil {
				t.Fatalf("the check of what was written passed a member whose SHA-256 is %x, datapackage.json saying %x", heldSum, res.MemberSHA256[member])
			}
			wantKind(t, rep.Err(), ErrDamaged, member, path)
		})
	}
}

// keepCRC is data with the byte at flip changed and the four bytes at
// fix set so that the CRC-32 (and size) is data's.
func keepCRC(t *testing.T, data []byte, flip, fix int) []byte {
	t.Helper()
	out := bytes.Clone(data)
	out[flip] ^= 0x20
	// CRC-32 is affine over messages of one length: the change of the
	// CRC-32 made by setting bit i of the four bytes is a fixed
	// vector; the bits whose changes add up to the flip's are solved
	// for by elimination over GF(2).
	want := crc32.ChecksumIEEE(out) ^ crc32.ChecksumIEEE(data) // to cancel
	var cols [32]uint32
	for i := range 32 {
		e := bytes.Clone(out)
		e[fix+i/8] ^= 1 << (i % 8)
		cols[i] = crc32.ChecksumIEEE(e) ^ crc32.ChecksumIEEE(out)
	}
	// Solve sum of cols[i] over chosen i == want.
	type row struct{ v, pick uint32 }
	var basis [32]row // by leading bit
	var have [32]bool
	for i, c := range cols {
		r := row{c, 1 << i}
		for bit := 31; bit >= 0; bit-- {
			if r.v&(1<<bit) == 0 {
				continue
			}
			if !have[bit] {
				basis[bit], have[bit] = r, true
				break
			}
			r.v ^= basis[bit].v
			r.pick ^= basis[bit].pick
		}
	}
	var pick uint32
	v := want
	for bit := 31; bit >= 0; bit-- {
		if v&(1<<bit) == 0 {
			continue
		}
		if !have[bit] {
			t.Fatal("no solution")
		}
		v ^= basis[bit].v
		pick ^= basis[bit].pick
	}
	for i := range 32 {
		if pick&(1<<i) != 0 {
			out[fix+i/8] ^= 1 << (i % 8)
		}
	}
	if crc32.ChecksumIEEE(out) != crc32.ChecksumIEEE(data) || bytes.Equal(out, data) {
		t.Fatal("forging the CRC-32 failed")
	}
	return out
}

// TestCheckWrittenFindsCopiedIndexWithCRCKept: the index a rebuild
// writes to a temporary file and stores is read for its SHA-256
// (datapackage.json's) and then copied by the kernel too: a change of
// the temporary file between the two that keeps its CRC-32 is found by
// the check of what was written.
func TestCheckWrittenFindsCopiedIndexWithCRCKept(t *testing.T) {
	members := validMembers(t)
	old, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	offsets := responseOffsets(t, warc)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1], offsets[2])
	const index = "indexes/index.cdxj"
	dir := t.TempDir()
	path := writeTemp(t, dir, "data.warc.gz", rw.data)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	changed := 0
	b := &Rebuild{Source: old, Replace: map[string]Replacement{"archive/data.warc.gz": {Path: path}}, FreshIndex: true,
		NoPackageSHA256: true, Now: rebuildTime, TempDir: tmp}
	b.beforeCopy = func(name string) {
		if name != index {
			return
		}
		temps, _ := filepath.Glob(filepath.Join(tmp, ".tmp-wacz-index-*"))
		for _, p := range temps {
			data, err := os.ReadFile(p)
			if err != nil || len(data) < 32 {
				continue
			}
			if err := os.WriteFile(p, keepCRC(t, data, len(data)/2, len(data)/2+8), 0o644); err != nil {
				t.Fatal(err)
			}
			changed++
		}
	}
	out, res, err := rebuildInto(t, b, dir)
	if err != nil {
		t.Fatal(err)
	}
	if changed == 0 {
		t.Fatal("no index file changed: the test proves nothing")
	}
	np, err := NewPackage(out, res.Size, "new.wacz")
	if err != nil {
		t.Fatal(err)
	}
	held := storedBytes(t, out, np, index)
	if sum := sha256.Sum256(held); bytes.Equal(sum[:], res.MemberSHA256[index]) {
		t.Fatal("the index held has datapackage.json's SHA-256: the test proves nothing")
	}
	rep, err := Check(np, CheckOptions{Written: res})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		if errors.Is(p, ErrDamaged) && strings.Contains(p.Error(), index) && strings.Contains(p.Error(), "SHA-256") {
			found = true
		}
	}
	if !found {
		t.Errorf("the check of what was written did not find the index's bytes other than its SHA-256 was taken of: %v", rep.Err())
	}
}
