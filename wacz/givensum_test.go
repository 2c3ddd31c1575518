package wacz

import (
	"bytes"
	"crypto/sha256"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/rewritelog"
)

// sumsMember is the WARC member of the packages the given-sums tests
// rebuild (rebuildWithSums).
const sumsMember = "archive/data.warc.gz"

// TestRebuildGivenSums proves what a rebuild does with the size, CRC-32
// and SHA-256 the rewrite's check took of a replacement
// (Replacement.Sum), its index made from known lines: it stores the
// member with them, not reading the file for them, and whatever they
// fail to describe of the bytes copied is refused. Copied by the
// kernel, the check of what was written takes the member's SHA-256
// again: a file changed after its sums were taken (its size and CRC-32
// kept, which anyone can do), or sums not of the file, are found there;
// copied here, the copy compares its own CRC-32 and SHA-256 with them;
// a size not the file's is refused by the copy.
func TestRebuildGivenSums(t *testing.T) {
	data := testWARC()
	const member = sumsMember
	offsets := responseOffsets(t, data)
	rw := revisitsOf(t, data, JoinName("x.wacz", member), offsets[1], offsets[2])
	good := sha256.Sum256(rw.data)
	other := sha256.Sum256([]byte("other bytes"))
	forged := keepCRC(t, rw.data, len(rw.data)/2, len(rw.data)/2+8)
	for _, tc := range []struct {
		name      string
		copyHere  bool // the whole file's SHA-256 asked for: no copy by the kernel
		sum       FileSum
		change    bool // the file changed after its sums, before its copy
		wantWrite string
		wantCheck string
	}{
		{"the file's sums, copied by the kernel", false, FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}, false, "", ""},
		{"the file's sums, copied here", true, FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}, false, "", ""},
		{"a SHA-256 not the file's, copied by the kernel", false, FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), other[:]}, false, "", "changed after that read"},
		{"a SHA-256 not the file's, copied here", true, FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), other[:]}, false, "changed after it was read", ""},
		{"changed after its sums, CRC-32 kept, copied by the kernel", false, FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}, true, "", "changed after that read"},
		{"changed after its sums, CRC-32 kept, copied here", true, FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}, true, "changed after it was read", ""},
		{"a size not the file's, copied by the kernel", false, FileSum{int64(len(rw.data)) - 1, crc32.ChecksumIEEE(rw.data), good[:]}, false, "changed after it was read", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var change func(path string)
			if tc.change {
				change = func(path string) {
					if err := os.WriteFile(path, forged, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, res, err := rebuildWithSums(t, data, rw, tc.sum, tc.copyHere, change)
			if tc.wantWrite != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantWrite) {
					t.Fatalf("rebuild error %v, want one saying %q", err, tc.wantWrite)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IndexedMembers {
				t.Fatal("the index read the members: the known lines were not used, the test proves nothing")
			}
			if _, copied := res.CopiedFrom[member]; copied == tc.copyHere {
				t.Fatalf("copied by the kernel: %v, want %v", copied, !tc.copyHere)
			}
			if !tc.copyHere && !bytes.Equal(res.MemberSHA256[member], tc.sum.SHA256) {
				// Its SHA-256 read again would be the file's.
				t.Fatalf("member's SHA-256 %x, not the one given %x: the file was read for it", res.MemberSHA256[member], tc.sum.SHA256)
			}
			np, rep := readBack(t, out, res)
			if tc.wantCheck == "" {
				if err := rep.Err(); err != nil || rep.CRC32 != res.CRC32 || rep.Size != res.Size {
					t.Fatalf("problems %v; read back as %d bytes, CRC-32 %08x, written as %d, %08x", err, rep.Size, rep.CRC32, res.Size, res.CRC32)
				}
				if held := sha256.Sum256(storedBytes(t, out, np, member)); held != good {
					t.Fatalf("the member holds bytes of SHA-256 %x, not the new version's %x", held, good)
				}
				return
			}
			wantKind(t, rep.Err(), ErrDamaged, member)
			if !strings.Contains(rep.Err().Error(), tc.wantCheck) {
				t.Fatalf("check found %v, want a problem saying %q", rep.Err(), tc.wantCheck)
			}
		})
	}
}

// rebuildWithSums writes a rebuild of a one-member package (data, its
// index from known lines) whose member is replaced by rw's new version
// with sum given as its sums (Replacement.Sum), copied here (the whole
// file's SHA-256 asked for) or by the kernel; change, if set, is given
// the new version's path just before the member is copied. It returns
// the package written, its Result and the rebuild's error.
func rebuildWithSums(t *testing.T, data []byte, rw rewrite, sum FileSum, copyHere bool, change func(path string)) (*os.File, *Result, error) {
	t.Helper()
	return rebuildWithSumsEdited(t, data, rw, sum, copyHere, change, nil)
}

// replacedPackage writes x.wacz in dir, a package of data as its one
// WARC member (sumsMember) and that member's CDXJ index, and rw's new
// version of the member beside it (data.copy): the package's path, the
// package opened, and the member's replacement.
func replacedPackage(t *testing.T, dir string, data []byte, rw rewrite) (string, *Package, rewritelog.Replacement) {
	t.Helper()
	lines := freshLinesOf(t, IndexName(sumsMember), data)
	slices.Sort(lines)
	members := append([]testMember{{name: sumsMember, data: string(data)}}, indexMembersOf(lines, "cdxj")...)
	path := writeTemp(t, dir, "x.wacz", packageBytes(members))
	old := openFile(t, path)
	return path, old, rewriteCopy(t, dir, "data.copy", JoinName("x.wacz", sumsMember), data, rw.data, rw.entries)
}

// rebuildWithSumsEdited is rebuildWithSums with the rebuild edited by
// edit (if set) before it writes.
func rebuildWithSumsEdited(t *testing.T, data []byte, rw rewrite, sum FileSum, copyHere bool, change func(path string), edit func(*Rebuild)) (*os.File, *Result, error) {
	t.Helper()
	const member = sumsMember
	dir := t.TempDir()
	path, old, rp := replacedPackage(t, dir, data, rw)
	store := &LineStore{Dir: filepath.Join(dir, "lines")}
	storeLines(t, store, path, old)
	if err := store.Derive(rp, stampOf(old.Member(member))); err != nil {
		t.Fatal(err)
	}
	replace := map[string]Replacement{member: {Path: rp.Path, Sum: &sum}}
	b := &Rebuild{Source: old, Replace: replace, FreshIndex: true, NoPackageSHA256: !copyHere, Now: rebuildTime, TempDir: dir,
		KnownLines: knownLinesOf(store, old, replace, map[string]os.FileInfo{member: rp.Old})}
	if change != nil {
		b.beforeCopy = func(name string) {
			if name == member {
				change(rp.Path)
			}
		}
	}
	if edit != nil {
		edit(b)
	}
	return rebuildInto(t, b, dir)
}
