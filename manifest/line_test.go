package manifest_test

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/manifest"
)

const (
	sha1Empty   = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
	sha1Robots  = "sha1:VIQCHCVLTSXPYXCRRSX35GPZEFC2OW7Z"
	md5Empty    = "md5:d41d8cd98f00b204e9800998ecf8427e"
	sha256Empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	sha512Empty = "sha512:cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
)

var parseTests = []struct {
	name string
	text string
	want manifest.Line
}{
	{
		name: "6 fields, spec example",
		text: "crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + sha1Robots,
		want: manifest.Line{File: "crawl-a.warc.gz", Offset: 3901, Length: 635, URI: "http://example.com/robots.txt",
			Date: "2012-04-08T20:13:38Z", Digest: sha1Robots, Fields: 6},
	},
	{
		name: "6 fields, offset 0 and md5",
		text: "a.arc 0 1 dns:example.com 2012-04-08T20:13:38Z " + md5Empty,
		want: manifest.Line{File: "a.arc", Offset: 0, Length: 1, URI: "dns:example.com",
			Date: "2012-04-08T20:13:38Z", Digest: md5Empty, Fields: 6},
	},
	{
		name: "6 fields, largest int64 offset and length",
		text: "dir/big.warc 9223372036854775807 9223372036854775807 http://x/ 2012-04-08T20:13:38Z " + sha256Empty,
		want: manifest.Line{File: "dir/big.warc", Offset: math.MaxInt64, Length: math.MaxInt64, URI: "http://x/",
			Date: "2012-04-08T20:13:38Z", Digest: sha256Empty, Fields: 6},
	},
	{
		name: "6 fields, escaped and non-ASCII fields kept verbatim",
		text: "caf\xc3\xa9%20x.warc 10 20 http://x/a%20b%0A%7F?q=%zz \xff " + sha512Empty,
		want: manifest.Line{File: "caf\xc3\xa9%20x.warc", Offset: 10, Length: 20, URI: "http://x/a%20b%0A%7F?q=%zz",
			Date: "\xff", Digest: sha512Empty, Fields: 6},
	},
	{
		name: "7 fields, ext 0",
		text: "crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + sha1Robots + " 0",
		want: manifest.Line{File: "crawl-a.warc.gz", Offset: 3901, Length: 635, URI: "http://example.com/robots.txt",
			Date: "2012-04-08T20:13:38Z", Digest: sha1Robots, Class: 0, Fields: 7},
	},
	{
		name: "7 fields, largest ext",
		text: "f 1 2 u d " + sha1Empty + " 2147483647",
		want: manifest.Line{File: "f", Offset: 1, Length: 2, URI: "u", Date: "d", Digest: sha1Empty, Class: math.MaxInt32, Fields: 7},
	},
	{
		name: "10 fields, copy 1, spec example",
		text: "crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + sha1Robots + " 0 1 - -",
		want: manifest.Line{File: "crawl-a.warc.gz", Offset: 3901, Length: 635, URI: "http://example.com/robots.txt",
			Date: "2012-04-08T20:13:38Z", Digest: sha1Robots, Class: 0, Copy: 1, RefURI: "-", RefDate: "-", Fields: 10},
	},
	{
		name: "10 fields, copy 2, spec example",
		text: "crawl-b.warc.gz 88127 610 http://example.com/robots.txt 2012-05-08T20:13:41Z " + sha1Robots +
			" 0 2 http://example.com/robots.txt 2012-04-08T20:13:38Z",
		want: manifest.Line{File: "crawl-b.warc.gz", Offset: 88127, Length: 610, URI: "http://example.com/robots.txt",
			Date: "2012-05-08T20:13:41Z", Digest: sha1Robots, Class: 0, Copy: 2,
			RefURI: "http://example.com/robots.txt", RefDate: "2012-04-08T20:13:38Z", Fields: 10},
	},
	{
		name: "revisit line",
		text: "crawl-b.warc.gz 88127 610 http://example.com/robots.txt 2012-05-08T20:13:41Z " + sha1Robots +
			" -1 0 http://example.com/robots.txt 2012-04-08T20:13:38Z",
		want: manifest.Line{File: "crawl-b.warc.gz", Offset: 88127, Length: 610, URI: "http://example.com/robots.txt",
			Date: "2012-05-08T20:13:41Z", Digest: sha1Robots, Class: -1, Copy: 0,
			RefURI: "http://example.com/robots.txt", RefDate: "2012-04-08T20:13:38Z", Fields: 10},
	},
	{
		name: "revisit line without digest or Refers-To-Date",
		text: "f 1 2 u d - -1 0 u *",
		want: manifest.Line{File: "f", Offset: 1, Length: 2, URI: "u", Date: "d", Digest: "-", Class: -1, Copy: 0,
			RefURI: "u", RefDate: "*", Fields: 10},
	},
	{
		name: "10 fields, ext and copy above 9",
		text: "f 1 2 u d " + md5Empty + " 12 2147483647 v e",
		want: manifest.Line{File: "f", Offset: 1, Length: 2, URI: "u", Date: "d", Digest: md5Empty,
			Class: 12, Copy: math.MaxInt32, RefURI: "v", RefDate: "e", Fields: 10},
	},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.Parse([]byte(tt.text))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.text, err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) =\n%+v, want\n%+v", tt.text, got, tt.want)
			}
		})
	}
}

func TestAppend(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := "previous\n"
			if got, want := string(tt.want.Append([]byte(prefix))), prefix+tt.text+"\n"; got != want {
				t.Errorf("Append =\n%q, want\n%q", got, want)
			}
			if got := tt.want.String(); got != tt.text {
				t.Errorf("String =\n%q, want\n%q", got, tt.text)
			}
		})
	}
}

func TestLineAlgorithm(t *testing.T) {
	tests := []struct {
		digest string
		want   digest.Algorithm
	}{
		{md5Empty, digest.MD5},
		{sha1Empty, digest.SHA1},
		{sha256Empty, digest.SHA256},
		{sha512Empty, digest.SHA512},
		{"SHA1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", 0},
		{"", 0},
	}
	for _, tt := range tests {
		l := manifest.Line{Digest: tt.digest}
		if got := l.Algorithm(); got != tt.want {
			t.Errorf("Line{Digest: %q}.Algorithm() = %v, want %v", tt.digest, got, tt.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	const six = "f 1 2 u d " + sha1Empty
	tests := []struct {
		name    string
		text    string
		errText string // part of the error message
	}{
		{"empty line", "", "fields"},
		{"1 field", "f", "fields"},
		{"5 fields", "f 1 2 u d", "fields"},
		{"8 fields", six + " 0 1", "fields"},
		{"9 fields", six + " 0 1 -", "fields"},
		{"11 fields", six + " 0 1 - - x", "fields"},
		{"12 fields", six + " 0 1 - - x y", "fields"},
		{"many fields", six + strings.Repeat(" x", 100), "fields"},
		{"two spaces in a row", "f 1 2  u d " + sha1Empty, "empty"},
		{"leading space", " f 1 2 u d " + sha1Empty, "empty"},
		{"trailing space", six + " ", "empty"},
		{"trailing space after 10 fields", six + " 0 1 - - ", "fields"},
		{"tab in file", "f\tg 1 2 u d " + sha1Empty, "control"},
		{"tab as separator", "f\t1 2 u d " + sha1Empty + " 0", "control"},
		{"CR at end", six + "\r", "control"},
		{"CR at end of 7 fields", six + " 0\r", "control"},
		{"CR in uri", "f 1 2 u\r d " + sha1Empty, "control"},
		{"LF in uri", "f 1 2 u\nv d " + sha1Empty, "control"},
		{"NUL in date", "f 1 2 u d\x00 " + sha1Empty, "control"},
		{"vertical tab in uri", "f 1 2 u\vv d " + sha1Empty, "control"},
		{"form feed in file", "f\f 1 2 u d " + sha1Empty, "control"},
		{"escape byte in date", "f 1 2 u d\x1b " + sha1Empty, "control"},
		{"DEL in refuri", six + " 0 2 u\x7f d", "control"},
		{"offset not a number", "f x 2 u d " + sha1Empty, "offset"},
		{"offset with sign", "f +1 2 u d " + sha1Empty, "offset"},
		{"offset negative", "f -1 2 u d " + sha1Empty, "offset"},
		{"offset negative zero", "f -0 2 u d " + sha1Empty, "offset"},
		{"offset leading zero", "f 01 2 u d " + sha1Empty, "offset"},
		{"offset 00", "f 00 2 u d " + sha1Empty, "offset"},
		{"offset hex", "f 0x10 2 u d " + sha1Empty, "offset"},
		{"offset decimal point", "f 1.0 2 u d " + sha1Empty, "offset"},
		{"offset exponent", "f 1e3 2 u d " + sha1Empty, "offset"},
		{"offset thousands separator", "f 1,000 2 u d " + sha1Empty, "offset"},
		{"offset non-ASCII digit", "f \u0661 2 u d " + sha1Empty, "offset"},
		{"offset overflows int64", "f 9223372036854775808 2 u d " + sha1Empty, "offset"},
		{"offset far too long", "f " + strings.Repeat("9", 40) + " 2 u d " + sha1Empty, "offset"},
		{"length not a number", "f 1 two u d " + sha1Empty, "length"},
		{"length negative", "f 1 -2 u d " + sha1Empty, "length"},
		{"length leading zero", "f 1 02 u d " + sha1Empty, "length"},
		{"length overflows int64", "f 1 9223372036854775808 u d " + sha1Empty, "length"},
		{"length 0", "f 1 0 u d " + sha1Empty, "length 0"},
		{"ext not a number", six + " a", "ext"},
		{"ext negative in 7 fields", six + " -1", "ext"},
		{"ext -2", six + " -2 0 u d", "ext"},
		{"revisit line with copy 2", six + " -1 2 u d", "has copy 0"},
		{"revisit line with copy 1", six + " -1 1 u d", "has copy 0"},
		{"revisit line without reference", six + " -1 0 - -", "must name"},
		{"revisit line without refdate", six + " -1 0 u -", "must name"},
		{"digest - on a response", "f 1 2 u d -", "digest"},
		{"digest - on a numbered response", "f 1 2 u d - 0 2 u d", "digest"},
		{"ext leading zero", six + " 01", "ext"},
		{"ext overflows int32", six + " 2147483648", "ext"},
		{"ext overflows int64", six + " 9223372036854775808", "ext"},
		{"ext in 10 fields not a number", six + " x 1 - -", "ext"},
		{"copy not a number", six + " 0 one - -", "copy"},
		{"copy negative", six + " 0 -1 - -", "copy"},
		{"copy leading zero", six + " 0 01 - -", "copy"},
		{"copy overflows int32", six + " 0 2147483648 u d", "copy"},
		{"copy 0 on a response", six + " 0 0 - -", "copy 0"},
		{"copy 0 with reference", six + " 0 0 u d", "copy 0"},
		{"copy 1 with reference", six + " 0 1 u d", "copy 1"},
		{"copy 1 with refuri only", six + " 0 1 u -", "copy 1"},
		{"copy 1 with refdate only", six + " 0 1 - d", "copy 1"},
		{"copy 2 without reference", six + " 0 2 - -", "copy 2"},
		{"copy 2 without refuri", six + " 0 2 - d", "copy 2"},
		{"copy 2 without refdate", six + " 0 2 u -", "copy 2"},
		{"digest without label", "f 1 2 u d 3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "digest"},
		{"digest upper-case label", "f 1 2 u d SHA1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "digest"},
		{"digest dashed label", "f 1 2 u d sha-1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "digest"},
		{"digest unknown algorithm", "f 1 2 u d crc32:00000000", "digest"},
		{"digest lower-case base32", "f 1 2 u d sha1:3i42h3s6nnfq2msvx7xzkyaysccx5qbyj", "digest"},
		{"digest sha1 in hex", "f 1 2 u d sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709", "digest"},
		{"digest upper-case hex", "f 1 2 u d md5:D41D8CD98F00B204E9800998ECF8427E", "digest"},
		{"digest too short", "f 1 2 u d sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY", "digest"},
		{"digest base32 padding", "f 1 2 u d sha1:3I42H3S6NNFQ2MSVX7XZKYAYSC======", "digest"},
		{"digest in place of date", "f 1 2 u " + sha1Empty + " d", "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := manifest.Parse([]byte(tt.text))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error", tt.text, l)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("Parse(%q) error %q does not mention %q", tt.text, err, tt.errText)
			}
			if l != (manifest.Line{}) {
				t.Errorf("Parse(%q) returned %+v with its error, want the zero Line", tt.text, l)
			}
		})
	}
}

// TestParseNumbers checks that offsets read as the numbers `sort -n` sees,
// across digit counts.
func TestParseNumbers(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 2147483647, 2147483648, 4294967296, 9999999999, 10000000000, math.MaxInt64} {
		text := "f " + strconv.FormatInt(n, 10) + " " + strconv.FormatInt(max(n, 1), 10) + " u d " + sha1Empty
		l, err := manifest.Parse([]byte(text))
		if err != nil {
			t.Errorf("Parse(%q): %v", text, err)
			continue
		}
		if l.Offset != n || l.Length != max(n, 1) {
			t.Errorf("Parse(%q) offset, length = %d, %d; want %d, %d", text, l.Offset, l.Length, n, max(n, 1))
		}
	}
}

// validLines are seeds for FuzzParse: one or more of each field count.
var validLines = []string{
	"crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + sha1Robots,
	"crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + sha1Robots + " 0",
	"crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + sha1Robots + " 0 1 - -",
	"crawl-b.warc.gz 88127 610 http://example.com/robots.txt 2012-05-08T20:13:41Z " + sha1Robots +
		" 3 2 http://example.com/robots.txt 2012-04-08T20:13:38Z",
	"a 0 1 u d " + md5Empty,
	"a 0 1 u d " + sha256Empty + " 12",
	"a 9223372036854775807 1 u d " + sha512Empty + " 2147483647 2147483647 x y",
}

func FuzzParse(f *testing.F) {
	for _, s := range validLines {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		"",
		" ",
		"a 1 2 u d",
		"a 01 2 u d " + sha1Empty,
		"a 1 0 u d " + sha1Empty,
		"a 1 2 u d " + sha1Empty + " 0 1 u d",
		"a 1 2 u d " + sha1Empty + " 0 2 - -",
		"a 1 2 u d " + sha1Empty + " 0 1 - - x",
		"a 1 2 u d sha1:3I42H3S6NNFQ2MSVX7XZKYAYSC======",
		"a 1 2 u  d " + sha1Empty,
		"a\t1 2 u d " + sha1Empty,
		"a\v 1 2 u d " + sha1Empty,
		"a 1 2 u\x7f d " + sha1Empty + " 0",
		"a 99999999999999999999 2 u d " + sha1Empty,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		l, err := manifest.Parse(text)
		if err != nil {
			return
		}
		if l.Fields != 6 && l.Fields != 7 && l.Fields != 10 {
			t.Fatalf("Parse(%q) = %d fields", text, l.Fields)
		}
		b := l.Append(nil)
		if len(b) == 0 || b[len(b)-1] != '\n' {
			t.Fatalf("Append(%+v) = %q, want a line feed at the end", l, b)
		}
		l2, err := manifest.Parse(b[:len(b)-1])
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, but Parse of its Append %q: %v", text, l, b, err)
		}
		if l2 != l {
			t.Fatalf("Parse(%q) = %+v, but Parse of its Append %q = %+v", text, l, b, l2)
		}
		// No field holds a byte a writer escapes.
		if i := bytes.IndexFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7F }); i >= 0 {
			t.Fatalf("Parse(%q) accepted control byte %#x at %d", text, text[i], i)
		}
		// Its digest is in the one manifest form of its sum.
		a, sum, err := digest.Parse(l.Digest)
		if err != nil || a.Format(sum) != l.Digest {
			t.Fatalf("Parse(%q) accepted digest %q: %v, %v, %x", text, l.Digest, err, a, sum)
		}
		// A valid line has exactly one form.
		if string(b[:len(b)-1]) != string(text) {
			t.Fatalf("Parse(%q) accepted a line that Append writes as %q", text, b)
		}
	})
}

// TestParseAllocatesOnlyFields proves that parsing a line allocates its
// string fields and nothing else (checking the digest decoded it, an
// allocation more on every line every stage reads), for each digest form.
func TestParseAllocatesOnlyFields(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		strings    float64 // the fields held as strings
	}{
		{"sha1, 6 fields", "f.warc.gz 0 10 http://a/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 4},
		{"md5, 6 fields", "f.warc.gz 0 10 http://a/ 20240101000000 md5:0123456789abcdef0123456789abcdef", 4},
		{"sha1, 10 fields", "f.warc.gz 0 10 http://a/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 0 2 http://b/ 20230101000000", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := []byte(tc.line)
			if _, err := manifest.Parse(line); err != nil {
				t.Fatal(err)
			}
			if got := testing.AllocsPerRun(100, func() { manifest.Parse(line) }); got > tc.strings {
				t.Errorf("%v allocations a line, want %v", got, tc.strings)
			}
		})
	}
}
