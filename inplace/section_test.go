package inplace

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
)

// sectionKinds are the two ways verify reads a file, each of which must
// give the same verdicts.
var sectionKinds = []struct {
	name string
	open openSection
}{{"mapped", openMapped}, {"read", openRead}}

// TestGuardFaultsMappedFileShortened proves that a mapped file cut
// shorter while it is read is an error of the read, not a crash of the
// process (the fault a read past its new end raises), and that a panic
// that is no such fault goes on.
func TestGuardFaultsMappedFileShortened(t *testing.T) {
	name := filepath.Join(t.TempDir(), "a.warc")
	if err := os.WriteFile(name, bytes.Repeat([]byte("x"), 3*os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := openMapped(f, int64(3*os.Getpagesize()))
	defer s.close()
	if _, ok := s.(*mapSection); !ok {
		t.Skip("this system does not map files")
	}
	if err := os.Truncate(name, 0); err != nil {
		t.Fatal(err)
	}
	var sum int
	err = guardFaults(func() error {
		b, err := s.bytes(int64(os.Getpagesize()), os.Getpagesize())
		if err != nil {
			return err
		}
		for _, c := range b {
			sum += int(c)
		}
		return nil
	}, s)
	if err == nil || !strings.Contains(err.Error(), "became shorter") {
		t.Fatalf("error %v, want the file's shortening", err)
	}
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Fatalf("recovered %v, want the panic that is no fault", r)
		}
	}()
	guardFaults(func() error { panic("not a fault") }, s)
}

// BenchmarkVerify measures the read-back of a new version of a 32 MB file
// of which 40% was rewritten as small records (as on the bench
// collection): every byte of both versions compared or hashed, through a
// mapping and through reads.
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(21, 9))
	src := make([]byte, 32<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	var segments []segment
	var dst []byte
	for off := 0; off < len(src); {
		n := min(20<<10, len(src)-off)
		if rng.IntN(10) < 4 {
			rec := src[off : off+min(n, 900)]
			segments = append(segments, segment{newOff: int64(len(dst)), length: int64(len(rec)), srcOff: int64(off), oldLen: int64(n), written: true})
			dst = append(dst, rec...)
		} else {
			segments = append(segments, segment{newOff: int64(len(dst)), length: int64(n), srcOff: int64(off)})
			dst = append(dst, src[off:off+n]...)
		}
		off += n
	}
	if err := os.WriteFile(filepath.Join(dir, "a.warc"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "a.warc"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tmp, err := atomicfile.Create(filepath.Join(dir, "b.warc"), 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer tmp.Abort()
	if _, err := tmp.Write(dst); err != nil {
		b.Fatal(err)
	}
	v := &Version{Src: f, tmp: tmp, Size: int64(len(src)), segments: segments}
	check := func(int, int64, int64, *os.File) error { return nil }
	for _, kind := range sectionKinds {
		b.Run(kind.name, func(b *testing.B) {
			b.SetBytes(int64(len(src) + len(dst)))
			for b.Loop() {
				if _, _, err := v.verifyWith(check, kind.open); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
