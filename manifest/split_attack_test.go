package manifest

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"strings"
	"testing"

	"warcdedup/digest"
)

// FuzzSplitAsParse: Split reads any line as Parse does (sameAsParse),
// from raw bytes seeded with every form of line a stage writes.
func FuzzSplitAsParse(f *testing.F) {
	for _, line := range attackSeeds() {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		sameAsParse(t, text)
	})
}

// FuzzSplitFieldsAsParse: Split reads as Parse does a line built of
// fuzzed fields, so that the fuzzer varies one field (a class, a copy, a
// digest, a reference) while the others keep the line numbered.
func FuzzSplitFieldsAsParse(f *testing.F) {
	for _, line := range attackSeeds() {
		fields := strings.SplitN(line, " ", 10)
		for len(fields) < 10 {
			fields = append(fields, "-")
		}
		n := uint8(len(strings.Split(line, " ")))
		f.Add(fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7], fields[8], fields[9], n)
	}
	f.Fuzz(func(t *testing.T, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10 string, n uint8) {
		fields := []string{f1, f2, f3, f4, f5, f6, f7, f8, f9, f10}
		k := int(n)%11 + 1
		if k > 10 {
			k = 10
		}
		sameAsParse(t, []byte(strings.Join(fields[:k], " ")))
	})
}

func attackSeeds() []string {
	s1 := sha1.Sum([]byte("a"))
	m := md5.Sum([]byte("a"))
	s2 := sha256.Sum256([]byte("a"))
	a, md, sh := digest.SHA1.Format(s1[:]), digest.MD5.Format(m[:]), digest.SHA256.Format(s2[:])
	ref := "http://a/ 2024-01-01T00:00:01Z"
	head := "x.warc 100 10 http://a/ 2024-01-01T00:00:01Z "
	return []string{
		head + a,
		head + a + " 3",
		head + a + " 0 1 - -",
		head + md + " 7 1 - -",
		head + sh + " 2147483647 2 " + ref,
		head + a + " 10 2 " + ref,
		head + a + " -1 0 " + ref,
		head + "- -1 0 " + ref,
		head + "- -1 0 http://a/ *",
		"x.warc 999999999999999999 1 http://a/ 2024-01-01T00:00:01Z " + a + " 0 1 - -",
		"x.warc 1000000000000000000 1 http://a/ 2024-01-01T00:00:01Z " + a + " 0 1 - -",
	}
}
