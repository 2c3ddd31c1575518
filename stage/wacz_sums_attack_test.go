package stage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/rewritelog"
	"warcdedup/wacz"
)

// TestGivenSumsStaleAttack attacks the sums the rewrite's check took of
// a staged member (PackageRewrite.Replaced), given to its package's
// rebuild while the staged file keeps its inode, size and modification
// time (replacementOf): the file is written over in place after that
// check, same size, its modification time put back (touch -d), so that
// the sums given are stale. Whatever the copy (by the kernel, or through
// this process when the package's SHA-256 is asked for) and whether the
// change keeps the CRC-32 or not, the rebuild must be refused, the
// package left byte for byte as it was and no new version beside it;
// unchanged, the same rebuild is put in place with the member's bytes.
// The index is made from known lines (as a run's is), the only case in
// which the rebuild takes the sums given rather than reading the file.
func TestGivenSumsStaleAttack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		copyHere bool   // the package's SHA-256 asked for: no copy by the kernel
		change   string // "", "flip" (CRC-32 changes), "keepCRC"
	}{
		{"unchanged, copied by the kernel", false, ""},
		{"unchanged, copied here", true, ""},
		{"byte flipped, mtime restored, copied by the kernel", false, "flip"},
		{"byte flipped, mtime restored, copied here", true, "flip"},
		{"CRC-32 kept, mtime restored, copied by the kernel", false, "keepCRC"},
		{"CRC-32 kept, mtime restored, copied here", true, "keepCRC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, before, old, m, data := generatedPackage(t, dir, 5)
			pkg := filepath.Base(path)
			indexes, err := old.Indexes()
			if err != nil || len(indexes) == 0 {
				t.Fatalf("indexes %v: %v", indexes, err)
			}
			rc := old.IndexReader(indexes[0])
			lines, err := io.ReadAll(rc)
			rc.Close()
			old.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The staged copy as the rewrite's check left it, and the sums
			// that check took of it.
			name := wacz.JoinName(pkg, m.Name)
			staged := filepath.Join(dir, "."+pkg+"#member"+stagedSuffix)
			if err := os.WriteFile(staged, data, 0o644); err != nil {
				t.Fatal(err)
			}
			checked, err := os.Stat(staged)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			pr := &PackageRewrite{paths: map[string]string{pkg: path}, staged: map[string]*stagedMember{name: {path: staged}},
				TempDir: t.TempDir(), Messages: &collected{}}
			pr.Replaced(rewritelog.Replacement{Name: name, Path: staged, New: checked, SHA256: hex.EncodeToString(sum[:]), CRC32: crc32.ChecksumIEEE(data), HasCRC32: true})
			if tc.change != "" {
				forged := bytes.Clone(data)
				forged[len(forged)/2] ^= 0x20
				if tc.change == "keepCRC" {
					keepCRCAttack(t, forged, len(forged)/2+16, crc32.ChecksumIEEE(data))
				}
				f, err := os.OpenFile(staged, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt(forged, 0); err != nil {
					t.Fatal(err)
				}
				f.Close()
				if err := os.Chtimes(staged, checked.ModTime(), checked.ModTime()); err != nil {
					t.Fatal(err)
				}
				now, err := os.Stat(staged)
				if err != nil || !sameVersion(checked, now) {
					t.Fatalf("the change is seen by its inode, size or time (%v): the test proves nothing", err)
				}
			}
			linesFile := filepath.Join(t.TempDir(), "lines")
			if err := os.WriteFile(linesFile, lines, 0o644); err != nil {
				t.Fatal(err)
			}
			emptyFile := filepath.Join(t.TempDir(), "empty")
			if err := os.WriteFile(emptyFile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var given bool
			_, err = pr.rebuild(pkg, map[string]string{m.Name: staged}, time.Now(), func(b *wacz.Rebuild) {
				b.NoPackageSHA256 = !tc.copyHere
				// Every member's lines known: the first member's file has
				// the package's whole index, the others none.
				b.KnownLines = func(member string) *os.File {
					if given = b.Replace[m.Name].Sum != nil; member != m.Name {
						f, _ := os.Open(emptyFile)
						return f
					}
					f, _ := os.Open(linesFile)
					return f
				}
			})
			if !given {
				t.Fatal("the rebuild was given no sums: the test proves nothing")
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*")); len(left) > 0 {
				t.Errorf("new versions left beside the package: %v", left)
			}
			if tc.change == "" {
				if err != nil {
					t.Fatal(err)
				}
				np, err := wacz.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer np.Close()
				rep, err := wacz.Check(np, wacz.CheckOptions{})
				if err != nil || rep.Err() != nil {
					t.Fatalf("the new package checks with %v %v", err, rep.Err())
				}
				sec, err := np.Section(np.Member(m.Name))
				if err != nil {
					t.Fatal(err)
				}
				if held, _ := io.ReadAll(sec); !bytes.Equal(held, data) {
					t.Fatal("the new package holds other bytes than the staged member's")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "changed after") {
				t.Errorf("rebuild error %v, want a refusal saying the member changed after its sums were taken", err)
			}
			if !bytes.Equal(after, before) {
				t.Error("the package changed: a member whose bytes are not those datapackage.json names may have been put in place")
			}
		})
	}
}

// keepCRCAttack changes the 4 bytes of b at at so that b's CRC-32 is
// want again (CRC-32 being linear: 32 bit flips there span its values).
func keepCRCAttack(t *testing.T, b []byte, at int, want uint32) {
	t.Helper()
	base := crc32.ChecksumIEEE(b)
	// effect[k] is what flipping bit k of b[at:at+4] does to the CRC-32.
	var effect [32]uint32
	for k := range effect {
		b[at+k/8] ^= 1 << (k % 8)
		effect[k] = crc32.ChecksumIEEE(b) ^ base
		b[at+k/8] ^= 1 << (k % 8)
	}
	// Gaussian elimination over GF(2): which flips make base^want.
	target := base ^ want
	rows := effect
	var combo [32]uint32 // combo[k]: the flips rows[k] is the sum of
	for k := range combo {
		combo[k] = 1 << k
	}
	for bit, r := 0, 0; bit < 32 && r < 32; bit++ {
		p := -1
		for i := r; i < 32; i++ {
			if rows[i]>>bit&1 == 1 {
				p = i
				break
			}
		}
		if p < 0 {
			continue
		}
		rows[r], rows[p] = rows[p], rows[r]
		combo[r], combo[p] = combo[p], combo[r]
		for i := 0; i < 32; i++ {
			if i != r && rows[i]>>bit&1 == 1 {
				rows[i] ^= rows[r]
				combo[i] ^= combo[r]
			}
		}
		r++
	}
	var flips uint32
	for i := 0; i < 32; i++ {
		if rows[i] != 0 && rows[i]&(rows[i]-1) == 0 && target&rows[i] != 0 {
			flips ^= combo[i]
		}
	}
	for k := 0; k < 32; k++ {
		if flips>>k&1 == 1 {
			b[at+k/8] ^= 1 << (k % 8)
		}
	}
	if got := crc32.ChecksumIEEE(b); got != want {
		t.Fatalf("CRC-32 %08x after the patch, want %08x", got, want)
	}
}

// TestReplacedSumsSecondRewriteAttack attacks the sums kept of a staged
// member rewritten twice (a second rewrite renaming a second new version
// over the first): the rebuild may be given only the sums of the version
// the staged file is when it looks, whichever reports came and in
// whatever order; none when the version there was not reported.
func TestReplacedSumsSecondRewriteAttack(t *testing.T) {
	const name = "x.wacz#archive/a.warc.gz"
	first, second := []byte("the first new version of the member"), []byte("the second new version, of another size")
	for _, tc := range []struct {
		name    string
		reports []int // which versions are reported, in order (1, 2)
		want    []byte
	}{
		{"both reported in order: the second's", []int{1, 2}, second},
		{"second only: the second's", []int{2}, second},
		{"first only, second unreported: none", []int{1}, nil},
		{"second reported before the first: none", []int{2, 1}, nil},
		{"none reported: none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "staged")
			write := func(data []byte) (os.FileInfo, rewritelog.Replacement) {
				tmp := path + ".tmp"
				if err := os.WriteFile(tmp, data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(data)
				return fi, rewritelog.Replacement{Name: name, Path: path, New: fi, SHA256: hex.EncodeToString(sum[:]), CRC32: crc32.ChecksumIEEE(data), HasCRC32: true}
			}
			_, rp1 := write(first)
			_, rp2 := write(second)
			pr := &PackageRewrite{staged: map[string]*stagedMember{name: {path: path}}}
			for _, v := range tc.reports {
				pr.Replaced(map[int]rewritelog.Replacement{1: rp1, 2: rp2}[v])
			}
			now, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			r := pr.replacementOf("x.wacz", "archive/a.warc.gz", path, now)
			if tc.want == nil {
				if r.Sum != nil {
					t.Fatalf("sums given %+v, of no version the staged file is", *r.Sum)
				}
				return
			}
			sum := sha256.Sum256(tc.want)
			if r.Sum == nil || r.Sum.Size != int64(len(tc.want)) || r.Sum.CRC32 != crc32.ChecksumIEEE(tc.want) || !bytes.Equal(r.Sum.SHA256, sum[:]) {
				t.Fatalf("sums given %+v, want those of %q", r.Sum, tc.want)
			}
		})
	}
}
