package wacz

import (
	"bytes"
	"crypto/sha256"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreByKernel: a replacement given with its SHA-256 is copied into
// a package file by the kernel with the size and CRC-32 it was read
// with; one whose size is not that any more is refused at once, one
// whose bytes changed at the same size is copied as it now is, under
// the CRC-32 read before, which its read back then lacks (what the
// check of a package written finds: TestRebuildReplacementChanged).
func TestStoreByKernel(t *testing.T) {
	content := []byte("WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n")
	sum := sha256.Sum256(content)
	for _, tc := range []struct {
		name      string
		written   []byte // the file's bytes when copied
		wantErr   bool   // refused by the copy
		wantOther bool   // copied, but not the bytes read
	}{
		{"the bytes read", content, false, false},
		{"a byte changed", append([]byte("X"), content[1:]...), false, true},
		{"grown", append(append([]byte(nil), content...), '!'), true, false},
		{"shrunk", content[:len(content)-1], true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTemp(t, dir, "member", tc.written)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			out, err := os.Create(filepath.Join(dir, "p.zip"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			z := newZipWriter(out, false)
			if !z.copyInKernel(out) {
				t.Fatal("a package file without its SHA-256 is not copied into by the kernel")
			}
			m := &Member{Name: "archive/data.warc.gz"}
			digest, err := z.storeRead(m, f, rawSum{size: int64(len(content)), crc: crc32.ChecksumIEEE(content), sha256: sum[:]})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "changed after it was read") {
					t.Fatalf("error %v, want one saying the file changed after it was read", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(digest, sum[:]) {
				t.Errorf("SHA-256 %x, want that read before, %x", digest, sum)
			}
			if err := z.close(nil); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			_, crc := z.sums()
			if crc != crc32.ChecksumIEEE(b) && !tc.wantOther {
				t.Errorf("whole file's CRC-32 %08x, the file's is %08x", crc, crc32.ChecksumIEEE(b))
			}
			d, err := readDir(&memFile{b: b}, int64(len(b)), "p.zip")
			if err != nil {
				t.Fatal(err)
			}
			got := d.members[0]
			if got.Method != Store || got.Size != int64(len(content)) || got.CRC32 != crc32.ChecksumIEEE(content) {
				t.Errorf("member %+v", got)
			}
			data := b[got.DataOffset : got.DataOffset+got.Size]
			if other := crc32.ChecksumIEEE(data) != got.CRC32; other != tc.wantOther {
				t.Errorf("data %q under CRC-32 %08x; bytes other than read: %v, want %v", data, got.CRC32, other, tc.wantOther)
			}
			if tc.wantOther && crc == crc32.ChecksumIEEE(b) {
				t.Error("the whole file's CRC-32 as written is that of the bytes on disk, which are not those read")
			}
		})
	}
}

// TestRebuildReplacementChanged: a replacement that changes between its
// read for its size, CRC-32 and SHA-256 and its copy into the package
// never passes: copied by the kernel (no whole-file SHA-256), a change
// of its size is refused by the rebuild, one of its bytes by the check
// of the package written (Check with Written), which names the file
// and the read; copied here (whole-file SHA-256 asked for), the rebuild
// refuses it as it copies it. Unchanged, the package checks clean with
// the CRC-32 written.
func TestRebuildReplacementChanged(t *testing.T) {
	members := validMembers(t)
	old, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	offsets := responseOffsets(t, warc)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1], offsets[2])
	const member = "archive/data.warc.gz"
	for _, tc := range []struct {
		name      string
		sha256    bool // the whole file's SHA-256 asked for
		change    func(t *testing.T, path string)
		wantWrite string // the rebuild's error; "" for none
		wantCheck string // the check's problem; "" for none
	}{
		{"unchanged, copied by the kernel", false, nil, "", ""},
		{"unchanged, copied here", true, nil, "", ""},
		{"a byte changed, size and time kept, copied by the kernel", false, flipKeepingTime(len(rw.data) / 2), "", "changed after that read"},
		{"a byte changed, size and time kept, copied here", true, flipKeepingTime(len(rw.data) / 2), "changed after it was read", ""},
		{"grown, copied by the kernel", false, appendByte, "changed after it was read", ""},
		{"shrunk, copied by the kernel", false, truncateByOne, "changed after it was read", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTemp(t, dir, "data.warc.gz", rw.data)
			b := &Rebuild{Source: old, Replace: map[string]Replacement{member: {Path: path}}, FreshIndex: true,
				NoPackageSHA256: !tc.sha256, Now: rebuildTime, TempDir: dir}
			if tc.change != nil {
				b.beforeCopy = func(name string) {
					if name == member {
						tc.change(t, path)
					}
				}
			}
			out, res, err := rebuildInto(t, b, dir)
			if tc.wantWrite != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantWrite) {
					t.Fatalf("rebuild error %v, want one saying %q", err, tc.wantWrite)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, copied := res.CopiedFrom[member]; copied == tc.sha256 {
				t.Errorf("copied by the kernel: %v, want %v", copied, !tc.sha256)
			}
			_, rep := readBack(t, out, res)
			if tc.wantCheck == "" {
				if err := rep.Err(); err != nil || rep.CRC32 != res.CRC32 || rep.Size != res.Size {
					t.Errorf("problems %v; read back as %d bytes, CRC-32 %08x, written as %d, %08x", err, rep.Size, rep.CRC32, res.Size, res.CRC32)
				}
				if want := sha256.Sum256(rw.data); !bytes.Equal(res.MemberSHA256[member], want[:]) {
					t.Errorf("member's SHA-256 %x, want %x", res.MemberSHA256[member], want)
				}
				return
			}
			wantKind(t, rep.Err(), ErrDamaged, member, path)
			if !strings.Contains(rep.Err().Error(), tc.wantCheck) {
				t.Errorf("check found %v, want a problem saying %q", rep.Err(), tc.wantCheck)
			}
			if rep.CRC32 == res.CRC32 {
				t.Errorf("read back with the CRC-32 written, %08x, though a member's bytes are not those read", res.CRC32)
			}
		})
	}
}

// flipKeepingTime changes the byte at the offset in place, and gives
// the file its modification time back (a look at its size and time
// alone sees nothing).
func flipKeepingTime(at int) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := f.ReadAt(b[:], int64(at)); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x20
		if _, err := f.WriteAt(b[:], int64(at)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

func appendByte(t *testing.T, path string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func truncateByOne(t *testing.T, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-1); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildCopiedMemberChanged: a member copied unchanged from the
// package file whose bytes there are not those its CRC-32 is of (the
// package changed after its check) is found by the check of what was
// written, copied by the kernel as copied here, and a package whose
// copied member is truncated is refused by the rebuild; unchanged, the
// copy by the kernel writes the bytes the copy here writes.
func TestRebuildCopiedMemberChanged(t *testing.T) {
	members := validMembers(t)
	_, src := packageOf(t, members)
	warc := []byte(members[0].data)
	offsets := responseOffsets(t, warc)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1])
	const copied = "pages/pages.jsonl"
	written := map[bool][]byte{}
	for _, tc := range []struct {
		name      string
		kernel    bool // NoPackageSHA256: copied by the kernel
		damage    func(t *testing.T, path string, p *Package)
		wantWrite string
		wantCheck bool
	}{
		{"unchanged, copied by the kernel", true, nil, "", false},
		{"unchanged, copied here", false, nil, "", false},
		{"a byte changed, copied by the kernel", true, flipMember(copied), "", true},
		{"a byte changed, copied here", false, flipMember(copied), "", true},
		{"cut short, copied by the kernel", true, cutInto(copied), "expected", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTemp(t, dir, "old.wacz", src)
			old := openFile(t, path)
			if tc.damage != nil {
				tc.damage(t, path, old)
			}
			repl := map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "data.warc.gz", rw.data)}}
			b := &Rebuild{Source: old, Replace: repl, FreshIndex: true, NoPackageSHA256: tc.kernel, Now: rebuildTime, TempDir: dir}
			out, res, err := rebuildInto(t, b, dir)
			if tc.wantWrite != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantWrite) {
					t.Fatalf("rebuild error %v, want one saying %q", err, tc.wantWrite)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, rep := readBack(t, out, res)
			if !tc.wantCheck {
				if err := rep.Err(); err != nil || rep.CRC32 != res.CRC32 {
					t.Errorf("problems %v; CRC-32 read back %08x, written %08x", err, rep.CRC32, res.CRC32)
				}
				b, err := os.ReadFile(out.Name())
				if err != nil {
					t.Fatal(err)
				}
				written[tc.kernel] = b
				return
			}
			wantKind(t, rep.Err(), ErrDamaged, copied)
		})
	}
	if len(written) == 2 && !bytes.Equal(written[true], written[false]) {
		t.Error("the copy by the kernel and the copy here wrote different bytes")
	}
}

// flipMember changes a byte of the member's data in the package file.
func flipMember(name string) func(t *testing.T, path string, p *Package) {
	return func(t *testing.T, path string, p *Package) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		at := p.Member(name).DataOffset + 1
		var b [1]byte
		if _, err := f.ReadAt(b[:], at); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x20
		if _, err := f.WriteAt(b[:], at); err != nil {
			t.Fatal(err)
		}
	}
}

// cutInto truncates the package file within the member's data.
func cutInto(name string) func(t *testing.T, path string, p *Package) {
	return func(t *testing.T, path string, p *Package) {
		if err := os.Truncate(path, p.Member(name).DataOffset+1); err != nil {
			t.Fatal(err)
		}
	}
}

// rebuildInto writes b's package to dir/new.wacz, closed when the test
// ends, and returns the file with what Write returned.
func rebuildInto(t *testing.T, b *Rebuild, dir string) (*os.File, *Result, error) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, "new.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	res, err := b.Write(out)
	return out, res, err
}

// readBack opens the package a rebuild wrote in out, as written (res),
// and checks it against what the rebuild says it wrote (Check with
// Written): the package and the check's report.
func readBack(t *testing.T, out *os.File, res *Result) (*Package, *Report) {
	t.Helper()
	np, err := NewPackage(out, res.Size, "new.wacz")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(np, CheckOptions{Written: res})
	if err != nil {
		t.Fatal(err)
	}
	return np, rep
}

// storedBytes are the bytes member name has as stored in np, the package
// in out: what its SHA-256 in datapackage.json must be of.
func storedBytes(t *testing.T, out *os.File, np *Package, name string) []byte {
	t.Helper()
	m := np.Member(name)
	if m == nil {
		t.Fatalf("%s: no member %s", out.Name(), name)
	}
	held := make([]byte, m.CompressedSize)
	if _, err := out.ReadAt(held, m.DataOffset); err != nil {
		t.Fatal(err)
	}
	return held
}
