package rewritelog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sums of "abc": SHA-256 (FIPS 180-2) and BLAKE3 (its reference
// implementation's output).
const (
	abcSHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	abcBLAKE3 = "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
)

func TestFixitySums(t *testing.T) {
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
		want  string // a sum the file has
		other string // a sum it has not
	}{
		{"a new log's BLAKE3", []string{abcBLAKE3}, abcBLAKE3, "blake3:" + strings.Repeat("0", 64)},
		{"an old log's bare SHA-256", []string{abcSHA256}, abcSHA256, strings.Repeat("0", 64)},
		{"both at once", []string{abcSHA256, abcBLAKE3}, abcSHA256, abcBLAKE3[:len(abcBLAKE3)-1] + "4"},
		{"no sum given: the fixity algorithm", nil, abcBLAKE3, abcSHA256},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := HashFile(path, Like(c.like...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !h.Matches(c.want) || h.Like(c.want) != c.want {
				t.Errorf("does not match %s (has %s)", c.want, h.Like(c.want))
			}
			if h.Matches(c.other) || h.Matches("-") {
				t.Errorf("matches %s or -", c.other)
			}
		})
	}
}

func TestSumAlgorithm(t *testing.T) {
	for _, c := range []struct {
		sum  string
		alg  Algorithm
		ok   bool
		read bool // a "# file" line with it is read
	}{
		{abcBLAKE3, BLAKE3, true, true},
		{abcSHA256, SHA256, true, true},
		{"-", 0, false, true},
		{"blake3:abc", BLAKE3, false, false},
		{"md5:" + strings.Repeat("0", 32), 0, false, false},
	} {
		alg, ok := SumAlgorithm(c.sum)
		if ok != c.ok || ok && alg != c.alg {
			t.Errorf("SumAlgorithm(%q) = %v, %v; want %v, %v", c.sum, alg, ok, c.alg, c.ok)
		}
		_, _, err := ParseFixity([]byte("# file a.warc 10 " + c.sum + " 5 " + c.sum))
		if (err == nil) != c.read {
			t.Errorf("a \"# file\" line with %q: %v", c.sum, err)
		}
	}
}

// BenchmarkFileHash is why the log's fixity is BLAKE3 (zeebo/blake3): on
// a machine without SHA instructions (AVX2/AVX-512 only) it ran at about
// 1.5 GB/s, lukechampine.com/blake3 at about 1.1 GB/s and crypto/sha256
// at about 0.22 GB/s, on 256 KiB buffers (the size the rewrite reads in).
func BenchmarkFileHash(b *testing.B) {
	buf := make([]byte, 256<<10)
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
