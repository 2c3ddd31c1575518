package wacz

import (
	"crypto/sha256"
	"hash/crc32"
	"os"
	"strings"
	"testing"
)

// TestRebuildReadBack proves that the check of a package whose members
// were read back while it was written (Rebuild.ReadBack) checks what a
// whole read after it would: the whole file's CRC-32 and SHA-256 of
// every byte, taken on from where the read back ended; a member copied in
// that the read back found changed after its sums were taken (CRC-32
// kept) is a problem of the check; and a central directory that does
// not give the members as they were written and read back is one too.
func TestRebuildReadBack(t *testing.T) {
	data := testWARC()
	const member = sumsMember
	offsets := responseOffsets(t, data)
	rw := revisitsOf(t, data, JoinName("x.wacz", member), offsets[1], offsets[2])
	good := sha256.Sum256(rw.data)
	sum := FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}
	forged := keepCRC(t, rw.data, len(rw.data)/2, len(rw.data)/2+8)
	flipped := []byte(string(rw.data))
	flipped[len(flipped)/2] ^= 1
	for _, tc := range []struct {
		name      string
		wholeSHA  bool
		change    []byte        // the file's bytes after its sums were taken, before its copy
		tamper    func(*Result) // what the read back found, made other than the file
		wantCheck string
	}{
		{"the whole file's SHA-256 taken on", true, nil, nil, ""},
		{"no whole SHA-256", false, nil, nil, ""},
		{"changed after its sums, CRC-32 kept", true, forged, nil, "datapackage.json says"},
		{"changed after its sums, CRC-32 not kept", false, flipped, nil, "the ZIP says"},
		{"central directory other than read back", false, nil, func(res *Result) { res.ahead.members[member].CRC32 ^= 1 }, "central directory"},
		{"a member read back missing from the directory", false, nil, func(res *Result) { res.ahead.members["archive/gone.warc.gz"] = &Member{Name: "archive/gone.warc.gz"} }, "were written and read back before its metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var change func(path string)
			if tc.change != nil {
				change = func(path string) {
					if err := os.WriteFile(path, tc.change, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, res, err := rebuildWithSumsEdited(t, data, rw, sum, false, change, func(b *Rebuild) { b.ReadBack = &ReadBack{PackageSHA256: tc.wholeSHA} })
			if err != nil {
				t.Fatal(err)
			}
			if res.ahead == nil || res.ahead.end <= res.Members[0].DataOffset {
				t.Fatal("no read back of the members was made: the test proves nothing")
			}
			if tc.tamper != nil {
				tc.tamper(res)
			}
			np, err := NewPackage(out, res.Size, "new.wacz")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(np, CheckOptions{Written: res, PackageSHA256: tc.wholeSHA})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCheck != "" {
				wantKind(t, rep.Err(), ErrDamaged)
				if !strings.Contains(rep.Err().Error(), tc.wantCheck) {
					t.Fatalf("check found %v, want a problem saying %q", rep.Err(), tc.wantCheck)
				}
				return
			}
			whole, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			if err := rep.Err(); err != nil || rep.CRC32 != crc32.ChecksumIEEE(whole) || rep.CRC32 != res.CRC32 {
				t.Fatalf("problems %v; CRC-32 %08x, the file's %08x, written %08x", err, rep.CRC32, crc32.ChecksumIEEE(whole), res.CRC32)
			}
			if want := sha256.Sum256(whole); tc.wholeSHA && string(rep.SHA256) != string(want[:]) {
				t.Fatalf("whole SHA-256 %x, the file's %x", rep.SHA256, want)
			}
		})
	}
}
