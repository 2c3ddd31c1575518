package inplace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/rewritelog"
)

// attackCase is a source and a new version of it built from cut points:
// the stretches between cuts alternately copied and written over (a
// record of recLen bytes in place of the stretch).
type attackCase struct {
	src, dst []byte
	segments []segment
}

func buildAttack(size int, cuts []int, recLen int, firstWritten bool) attackCase {
	rng := rand.New(rand.NewPCG(uint64(size), uint64(len(cuts))))
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(rng.Uint32()) | 1 // never zero: zeros past a cut end must not compare equal
	}
	var c attackCase
	c.src = src
	points := []int{0}
	for _, p := range cuts {
		if p > points[len(points)-1] && p < size {
			points = append(points, p)
		}
	}
	points = append(points, size)
	written := firstWritten
	for i := 0; i+1 < len(points); i++ {
		from, to := points[i], points[i+1]
		if written {
			rec := bytes.Repeat([]byte{'R'}, recLen)
			c.segments = append(c.segments, segment{newOff: int64(len(c.dst)), length: int64(len(rec)), srcOff: int64(from), oldLen: int64(to - from), written: true})
			c.dst = append(c.dst, rec...)
		} else {
			c.segments = append(c.segments, segment{newOff: int64(len(c.dst)), length: int64(to - from), srcOff: int64(from)})
			c.dst = append(c.dst, src[from:to]...)
		}
		written = !written
	}
	if size == 0 {
		c.segments = nil
	}
	return c
}

// attackVersion writes c's two versions to files and returns the
// Version to verify, with the paths of both.
func attackVersion(t *testing.T, c attackCase) (v *Version, srcFile, newFile *os.File) {
	t.Helper()
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "a.warc")
	if err := os.WriteFile(srcPath, c.src, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	srcFile, err = os.OpenFile(srcPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srcFile.Close() })
	tmp, err := atomicfile.Create(filepath.Join(dir, "b.warc"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tmp.Abort() })
	if _, err := tmp.Write(c.dst); err != nil {
		t.Fatal(err)
	}
	return &Version{Src: f, tmp: tmp, Size: int64(len(c.src)), segments: c.segments}, srcFile, tmp.File
}

func sumOf(b []byte) string {
	h := fixity.New(fixity.Default)
	h.Write(b)
	return h.Sum(fixity.Default)
}

func noCheck(int, int64, int64, *os.File) error { return nil }

// TestVerifyAttackWindowBoundaries proves that both ways of reading give
// the true sums of both versions for files of sizes around pages and
// mapping windows, with segments that end exactly at, one before and one
// after a window's end, and that a byte changed in a copied stretch of
// either version, wherever it lies relative to a window, is refused by
// both.
func TestVerifyAttackWindowBoundaries(t *testing.T) {
	page := os.Getpagesize()
	w := mapWindow
	sizes := []int{1, page - 1, page, page + 1, w - 1, w, w + 1, w + page + 1, 2*w + 3}
	cuts := []int{page - 1, page, page + 1, w - verifyChunk, w - 1, w, w + 1, w + page, 2*w - 1, 2 * w}
	for _, size := range sizes {
		for _, firstWritten := range []bool{false, true} {
			c := buildAttack(size, cuts, 77, firstWritten)
			name := fmt.Sprintf("size %d first written %v", size, firstWritten)
			t.Run(name, func(t *testing.T) {
				v, srcFile, newFile := attackVersion(t, c)
				for _, kind := range sectionKinds {
					oldSum, newSum, err := v.verifyWith(noCheck, kind.open)
					if err != nil {
						t.Fatalf("%s: refused: %v", kind.name, err)
					}
					if oldSum != sumOf(c.src) || newSum != sumOf(c.dst) {
						t.Fatalf("%s: sums %s %s, want the versions' %s %s", kind.name, oldSum, newSum, sumOf(c.src), sumOf(c.dst))
					}
				}
				// Every interesting byte of a copied stretch, flipped in one
				// version, then the other.
				var spots []struct{ newAt, srcAt int64 }
				for _, s := range c.segments {
					if s.written || s.length == 0 {
						continue
					}
					for _, d := range []int64{0, s.length - 1, int64(page) - 1 - s.newOff%int64(page), int64(w) - 1 - s.newOff, int64(w) - s.newOff, int64(w) - 1 - s.srcOff, int64(w) - s.srcOff} {
						if d >= 0 && d < s.length {
							spots = append(spots, struct{ newAt, srcAt int64 }{s.newOff + d, s.srcOff + d})
						}
					}
				}
				for _, spot := range spots {
					for _, which := range []struct {
						f  *os.File
						at int64
					}{{newFile, spot.newAt}, {srcFile, spot.srcAt}} {
						flip(t, which.f, which.at)
						for _, kind := range sectionKinds {
							if _, _, err := v.verifyWith(noCheck, kind.open); err == nil || !strings.Contains(err.Error(), "differ") {
								t.Errorf("%s: byte %d of %s flipped: error %v, want a difference", kind.name, which.at, which.f.Name(), err)
							}
						}
						flip(t, which.f, which.at)
					}
				}
			})
		}
	}
}

func flip(t *testing.T, f *os.File, at int64) {
	t.Helper()
	b := []byte{0}
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// mappings counts the process's memory mappings of files in dir.
func mappings(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return bytes.Count(b, []byte(dir+string(filepath.Separator)))
}

// TestVerifyAttackShortenedWhileMapped proves that either version cut
// shorter by another process once verify has mapped it is an error, not
// a crash, wherever the cut falls (in a copied stretch, compared; in a
// written one, only hashed; in the new version), and that no mapping is
// left behind.
func TestVerifyAttackShortenedWhileMapped(t *testing.T) {
	page := os.Getpagesize()
	w := mapWindow
	size := 3*w + 5
	cuts := []int{w / 2, w + 1, 2*w + page, 3 * w}
	cases := []struct {
		name         string
		firstWritten bool
		cutNew       bool
		cutTo        int64
		sha256       bool // the old version checked against a SHA-256 (undo), the new one's taken too
	}{
		{"source cut in a copied stretch, first window", false, false, int64(w / 4), false},
		{"source cut in a written stretch, first window", true, false, int64(w/4 + 3), false},
		{"source cut in a copied stretch, later window", false, false, int64(w + page + 1), false},
		{"source cut in a written stretch, later window", true, false, int64(w + page), false},
		{"source cut to nothing", false, false, 0, false},
		{"new version cut in a copied stretch", false, true, int64(w / 8), false},
		{"new version cut to nothing", true, true, 0, false},
		{"source cut in a written stretch, SHA-256 sums", true, false, int64(w + page), true},
		{"new version cut in a written stretch, SHA-256 sums", true, true, 2500, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := buildAttack(size, cuts, 5000, tc.firstWritten)
			v, srcFile, newFile := attackVersion(t, c)
			if tc.sha256 {
				v.expect = &rewritelog.Fixity{NewSum: strings.Repeat("0", 64)}
				v.pl = &Placement{SHA256: true}
			}
			cut := srcFile
			if tc.cutNew {
				cut = newFile
			}
			opened := 0
			cutting := func(f *os.File, size int64) section {
				s := openMapped(f, size)
				if _, ok := s.(*mapSection); !ok {
					t.Skip("this system does not map files")
				}
				if opened++; opened == 2 {
					if err := cut.Truncate(tc.cutTo); err != nil {
						t.Fatal(err)
					}
				}
				return s
			}
			dir := filepath.Dir(srcFile.Name())
			before := mappings(t, dir)
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panicked: %v", r)
					}
				}()
				_, _, err = v.verifyWith(noCheck, cutting)
			}()
			if err == nil {
				t.Fatal("verified a version cut shorter while it was read")
			}
			t.Log(err)
			if after := mappings(t, dir); after != 0 || before != 0 {
				t.Errorf("%d mappings of the files before, %d after: %v", before, after, err)
			}
		})
	}
}

// TestOpenMappedAttackUnmappable proves that a file that cannot be mapped
// (a pipe; a file open only for writing) is read instead, and that a read
// that cannot be made is an error of the read, not a panic or a mapping
// of another file.
func TestOpenMappedAttackUnmappable(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.warc")
	if err := os.WriteFile(name, bytes.Repeat([]byte("y"), 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	wo, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer wo.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	cases := []struct {
		name string
		f    *os.File
	}{{"a file open only for writing", wo}, {"a pipe", pr}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openMapped(tc.f, 10000)
			defer s.close()
			if _, ok := s.(*readSection); !ok {
				t.Fatalf("opened as %T, want it read", s)
			}
			if _, err := s.bytes(0, 100); err == nil {
				t.Fatal("read 100 bytes that cannot be read")
			}
			if n := mappings(t, dir); n != 0 {
				t.Errorf("%d mappings of the file", n)
			}
		})
	}
}
