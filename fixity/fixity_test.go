package fixity

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// The sums of "abc": SHA-256 (FIPS 180-2) and BLAKE3 (its reference
// implementation's output).
const (
	abcSHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	abcBLAKE3 = "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		name string
		alg  Algorithm
		want string
	}{
		{"BLAKE3 labelled", BLAKE3, abcBLAKE3},
		{"SHA-256 bare hex, as earlier logs and the crawl index hold it", SHA256, abcSHA256},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.alg.New()
			h.Write([]byte("abc"))
			if got := c.alg.Format(h.Sum(nil)); got != c.want {
				t.Errorf("Format = %s, want %s", got, c.want)
			}
			if alg, ok := AlgorithmOf(c.want); !ok || alg != c.alg {
				t.Errorf("AlgorithmOf(%s) = %v, %v; want %v", c.want, alg, ok, c.alg)
			}
		})
	}
}

func TestAlgorithmOf(t *testing.T) {
	for _, c := range []struct {
		name string
		sum  string
		alg  Algorithm
		ok   bool
	}{
		{"BLAKE3", abcBLAKE3, BLAKE3, true},
		{"legacy bare-hex SHA-256", abcSHA256, SHA256, true},
		{"a placeholder without label is a SHA-256 that matches nothing", "x", SHA256, true},
		{"no sum (a dry run's)", "-", 0, false},
		{"BLAKE3 too short", "blake3:abc", BLAKE3, false},
		{"BLAKE3 in upper case", "blake3:" + strings.ToUpper(abcBLAKE3[7:]), BLAKE3, false},
		{"unknown label refused", "md5:" + strings.Repeat("0", 32), 0, false},
		{"sha256: label (WACZ's form) is not a fixity sum's form", "sha256:" + abcSHA256, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			alg, ok := AlgorithmOf(c.sum)
			if ok != c.ok || ok && alg != c.alg {
				t.Errorf("AlgorithmOf(%q) = %v, %v; want %v, %v", c.sum, alg, ok, c.alg, c.ok)
			}
		})
	}
}

func TestLike(t *testing.T) {
	for _, c := range []struct {
		name string
		sums []string
		want []Algorithm
	}{
		{"none", nil, nil},
		{"each once, in order", []string{abcSHA256, abcBLAKE3, abcSHA256}, []Algorithm{SHA256, BLAKE3}},
		{"no sum and unknown labels left out", []string{"-", "md5:00", abcBLAKE3}, []Algorithm{BLAKE3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Like(c.sums...); !slices.Equal(got, c.want) {
				t.Errorf("Like = %v, want %v", got, c.want)
			}
		})
	}
}

// TestHashFileAndStream proves a file and a stream of its bytes (read a
// byte at a time, so that no buffer size hides a difference) have the
// same sums, and that a hash matches the sums of its algorithms only.
func TestHashFileAndStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	size, sum, err := FileSum(path)
	if err != nil || size != 3 || sum != abcBLAKE3 {
		t.Fatalf("FileSum = %d, %s, %v; want 3, %s", size, sum, err, abcBLAKE3)
	}
	for _, c := range []struct {
		name  string
		like  []string
		want  string // a sum the bytes have
		other string // a sum they have not
	}{
		{"BLAKE3", []string{abcBLAKE3}, abcBLAKE3, "blake3:" + strings.Repeat("0", 64)},
		{"legacy bare-hex SHA-256", []string{abcSHA256}, abcSHA256, strings.Repeat("0", 64)},
		{"both at once", []string{abcSHA256, abcBLAKE3}, abcSHA256, abcBLAKE3[:len(abcBLAKE3)-1] + "4"},
		{"no sum given: the default algorithm", nil, abcBLAKE3, abcSHA256},
		{"unknown label: the default algorithm, matching nothing else", []string{"md5:00"}, abcBLAKE3, "md5:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, err := HashFile(path, Like(c.like...)...)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := HashReader(iotest.OneByteReader(bytes.NewReader([]byte("abc"))), Like(c.like...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []*Hash{file, stream} {
				if !h.Is(3, c.want) || h.Like(c.want) != c.want {
					t.Errorf("not 3 bytes of %s (has %s, %d bytes)", c.want, h.Like(c.want), h.Size())
				}
				if h.Matches(c.other) || h.Matches("-") || h.Is(4, c.want) {
					t.Errorf("matches %s, - or another size", c.other)
				}
			}
			for _, a := range []Algorithm{SHA256, BLAKE3} {
				if file.Sum(a) != stream.Sum(a) {
					t.Errorf("%v: file %s, stream %s", a, file.Sum(a), stream.Sum(a))
				}
			}
		})
	}
	if _, err := HashFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file has a sum")
	}
	if _, err := HashReader(iotest.ErrReader(os.ErrClosed)); err == nil {
		t.Error("a failing stream has a sum")
	}
}

// BenchmarkHash is why new fixity sums are BLAKE3 (zeebo/blake3): on a
// machine without SHA instructions (AVX2/AVX-512 only) it ran at about
// 1.5 GB/s, lukechampine.com/blake3 at about 1.1 GB/s and crypto/sha256
// at about 0.22 GB/s, on 256 KiB buffers (the size the rewrite reads in).
func BenchmarkHash(b *testing.B) {
	buf := make([]byte, bufferSize)
	for i := range buf {
		buf[i] = byte(i*7 + i>>9)
	}
	for _, a := range []Algorithm{SHA256, BLAKE3} {
		b.Run(a.String(), func(b *testing.B) {
			h := a.New()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				h.Write(buf)
			}
			h.Sum(nil)
		})
	}
}
