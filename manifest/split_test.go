package manifest

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"strings"
	"testing"

	"warcdedup/digest"
)

// sameAsParse fails t unless Split reads text as Parse does: the same
// error, or the same file, digest, class, copy and field count.
func sameAsParse(t *testing.T, text []byte) {
	t.Helper()
	var s Split
	err := s.Read(text)
	l, perr := Parse(text)
	switch {
	case (err == nil) != (perr == nil) || err != nil && err.Error() != perr.Error():
		t.Fatalf("%q: Split error %v, Parse error %v", text, err, perr)
	case err != nil:
	case string(s.File) != l.File || string(s.Digest) != l.Digest || s.Class != l.Class || s.Copy != l.Copy || s.Fields != l.Fields:
		t.Fatalf("%q: Split %q %q class %d copy %d fields %d, Parse %q %q class %d copy %d fields %d", text,
			s.File, s.Digest, s.Class, s.Copy, s.Fields, l.File, l.Digest, l.Class, l.Copy, l.Fields)
	case s.IsKept() != l.IsKept() || s.IsDuplicate() != l.IsDuplicate() || s.IsRevisit() != l.IsRevisit():
		t.Fatalf("%q: Split and Parse disagree on what the line is", text)
	}
}

// TestSplitAsParse: Split takes the lines Parse takes, as Parse reads
// them, and refuses the others with Parse's error; the numbered lines in
// the form Append writes (fast) are split, not parsed. Each damaged case
// is one the split alone would have taken for a line of the numbering.
func TestSplitAsParse(t *testing.T) {
	s1 := sha1.Sum([]byte("a"))
	m := md5.Sum([]byte("a"))
	a, md := digest.SHA1.Format(s1[:]), digest.MD5.Format(m[:])
	line := func(file, length, dig, num string) string {
		return file + " 0 " + length + " http://a/ 2024-01-01T00:00:01Z " + dig + " " + num
	}
	ref := "http://a/ 2024-01-01T00:00:01Z"
	cases := []struct {
		name string
		line string
		fast bool // split, not parsed
		err  bool
	}{
		{"an original", line("x.warc", "10", a, "0 1 - -"), true, false},
		{"an original of the last class", line("x.warc", "10", a, "2147483647 1 - -"), true, false},
		{"a duplicate", line("x.arc.gz", "10", a, "3 12 "+ref), true, false},
		{"an md5 digest", line("x.warc", "10", md, "0 1 - -"), true, false},
		{"a revisit line", line("x.warc", "10", a, "-1 0 "+ref), true, false},
		{"a pin: a revisit line without a digest", line("x.warc", "10", "-", "-1 0 "+ref), true, false},
		{"an offset of 19 digits", "x.warc 1000000000000000000 10 http://a/ 2024-01-01T00:00:01Z " + a + " 0 1 - -", false, false},
		{"six fields", "x.warc 0 10 http://a/ 2024-01-01T00:00:01Z " + a, false, false},
		{"seven fields", "x.warc 0 10 http://a/ 2024-01-01T00:00:01Z " + a + " 4", false, false},
		{"a negative class", line("x.warc", "10", a, "-5 1 - -"), false, true},
		{"a class with a leading zero", line("x.warc", "10", a, "00 1 - -"), false, true},
		{"a class out of range", line("x.warc", "10", a, "2147483648 1 - -"), false, true},
		{"a copy out of range", line("x.warc", "10", a, "0 2147483648 "+ref), false, true},
		{"a copy 0 on a response", line("x.warc", "10", a, "3 0 "+ref), false, true},
		{"a copy 1 with a reference", line("x.warc", "10", a, "1 1 "+ref), false, true},
		{"a duplicate without a reference", line("x.warc", "10", a, "0 2 - -"), false, true},
		{"a duplicate with half a reference", line("x.warc", "10", a, "0 2 http://a/ -"), false, true},
		{"a duplicate of class -1", line("x.warc", "10", a, "-1 2 "+ref), false, true},
		{"a revisit line with copy 1", line("x.warc", "10", a, "-1 1 - -"), false, true},
		{"a revisit line without a reference", line("x.warc", "10", a, "-1 0 - -"), false, true},
		{"a length of 0", line("x.warc", "0", a, "0 1 - -"), false, true},
		{"a length with a leading zero", line("x.warc", "010", a, "0 1 - -"), false, true},
		{"an offset with a sign", "x.warc +0 10 http://a/ 2024-01-01T00:00:01Z " + a + " 0 1 - -", false, true},
		{"an offset out of range", "x.warc 9999999999999999999 10 http://a/ 2024-01-01T00:00:01Z " + a + " 0 1 - -", false, true},
		{"a digest in lower case", line("x.warc", "10", strings.ToLower(a), "0 1 - -"), false, true},
		{"a response without a digest", line("x.warc", "10", "-", "0 1 - -"), false, true},
		{"an unknown algorithm", line("x.warc", "10", "sha3"+a[4:], "0 1 - -"), false, true},
		{"an empty field", line("x.warc", "10", "", "0 1 - -"), false, true},
		{"eleven fields", line("x.warc", "10", a, "0 1 - - -"), false, true},
		{"a trailing space", line("x.warc", "10", a, "0 1 - - "), false, true},
		{"a carriage return", line("x.warc", "10", a, "0 1 - -\r"), false, true},
		{"a zero byte in the URI", "x.warc 0 10 http://a/\x00 2024-01-01T00:00:01Z " + a + " 0 1 - -", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := []byte(tc.line)
			if _, err := Parse(text); (err != nil) != tc.err {
				t.Fatalf("Parse error %v; the case wants one: %v", err, tc.err)
			}
			sameAsParse(t, text)
			var s Split
			if got := s.numbered(text); got != tc.fast {
				t.Errorf("split without parsing: %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestSplitEveryByte: Split reads as Parse does each numbered line (an
// original, a duplicate, a revisit line, a pin) with any byte at any
// place, and with a byte more or less at its end.
func TestSplitEveryByte(t *testing.T) {
	sum := sha1.Sum([]byte("a"))
	a := digest.SHA1.Format(sum[:])
	for _, line := range []string{
		"x.warc 100 10 http://a/ 2024-01-01T00:00:01Z " + a + " 0 1 - -",
		"x.warc 100 10 http://a/ 2024-01-01T00:00:01Z " + a + " 10 2 http://a/ 2024-01-01T00:00:01Z",
		"x.warc 100 10 http://a/ 2024-01-01T00:00:01Z " + a + " -1 0 http://a/ 2024-01-01T00:00:01Z",
		"x.warc 100 10 http://a/ 2024-01-01T00:00:01Z - -1 0 http://a/ 2024-01-01T00:00:01Z",
	} {
		for at := range len(line) {
			for c := range 256 {
				text := []byte(line)
				text[at] = byte(c)
				sameAsParse(t, text)
			}
		}
		sameAsParse(t, []byte(line[:len(line)-1]))
		sameAsParse(t, []byte(line+"0"))
	}
}

// TestHasControl: the 8-byte check finds a control byte (below 0x20, or
// 0x7F) at every place of a line and of every value, and none in a line
// of printable and non-ASCII bytes, as indexControl does.
func TestHasControl(t *testing.T) {
	clean := []byte("x.warc 0 10 http://a/\xc3\xa9\xff\x80~ 2024-01-01T00:00:01Z sha1:ABC 0 1 - -")
	if hasControl(clean) {
		t.Fatalf("control byte found in %q", clean)
	}
	for c := range 256 {
		control := c < 0x20 || c == 0x7F
		for at := range clean {
			line := bytes.Clone(clean)
			line[at] = byte(c)
			if got := hasControl(line); got != control {
				t.Fatalf("byte 0x%02X at %d: hasControl %v", c, at, got)
			}
		}
	}
}

// BenchmarkSplit: Split against Parse on a numbered line as Append
// writes it.
func BenchmarkSplit(b *testing.B) {
	sum := sha1.Sum([]byte("a"))
	text := []byte("y.warc.gz 7654321 8901 http://example.com/other/page/x 2024-02-01T00:00:01Z " +
		digest.SHA1.Format(sum[:]) + " 0 2 http://example.com/some/page/x 2024-01-01T00:00:01Z")
	b.Run("Split", func(b *testing.B) {
		var s Split
		for b.Loop() {
			if err := s.Read(text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse(text); err != nil {
				b.Fatal(err)
			}
		}
	})
}
