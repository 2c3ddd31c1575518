package digest_test

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"warcdedup/digest"
)

// vectors holds the sums of "" and "abc" for every algorithm, written out as
// published test vectors (FIPS 180, RFC 1321) rather than computed, so that
// a wrong Algorithm.New would be caught.
var vectors = []struct {
	a     digest.Algorithm
	input string
	hex   string
	field string // manifest form
}{
	{digest.MD5, "", "d41d8cd98f00b204e9800998ecf8427e", "md5:d41d8cd98f00b204e9800998ecf8427e"},
	{digest.MD5, "abc", "900150983cd24fb0d6963f7d28e17f72", "md5:900150983cd24fb0d6963f7d28e17f72"},
	{digest.SHA1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709", "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
	{digest.SHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d", "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"},
	{digest.SHA256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	{digest.SHA256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	{digest.SHA512, "", "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
		"sha512:cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"},
	{digest.SHA512, "abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
		"sha512:ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"},
}

func sumOf(a digest.Algorithm, s string) []byte {
	h := a.New()
	h.Write([]byte(s))
	return h.Sum(nil)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestAlgorithm(t *testing.T) {
	tests := []struct {
		a          digest.Algorithm
		name       string
		size       int
		encodedLen int
	}{
		{digest.MD5, "md5", 16, 32},
		{digest.SHA1, "sha1", 20, 32},
		{digest.SHA256, "sha256", 32, 64},
		{digest.SHA512, "sha512", 64, 128},
	}
	if len(tests) != len(digest.Algorithms) {
		t.Fatalf("Algorithms has %d entries, test knows %d", len(digest.Algorithms), len(tests))
	}
	for i, tt := range tests {
		if digest.Algorithms[i] != tt.a {
			t.Errorf("Algorithms[%d] = %v, want %v", i, digest.Algorithms[i], tt.a)
		}
		if !tt.a.Valid() {
			t.Errorf("%v.Valid() = false", tt.a)
		}
		if got := tt.a.String(); got != tt.name {
			t.Errorf("String() = %q, want %q", got, tt.name)
		}
		if got := tt.a.Size(); got != tt.size {
			t.Errorf("%v.Size() = %d, want %d", tt.a, got, tt.size)
		}
		if got := tt.a.New().Size(); got != tt.size {
			t.Errorf("%v.New().Size() = %d, want %d", tt.a, got, tt.size)
		}
		if got := tt.a.EncodedLen(); got != tt.encodedLen {
			t.Errorf("%v.EncodedLen() = %d, want %d", tt.a, got, tt.encodedLen)
		}
	}
	for _, a := range []digest.Algorithm{0, 5, -1} {
		if a.Valid() {
			t.Errorf("Algorithm(%d).Valid() = true", int(a))
		}
		if got, want := a.String(), "digest.Algorithm("; !strings.HasPrefix(got, want) {
			t.Errorf("Algorithm(%d).String() = %q, want prefix %q", int(a), got, want)
		}
	}
}

func TestFormatVectors(t *testing.T) {
	for _, tt := range vectors {
		sum := sumOf(tt.a, tt.input)
		if got := hex.EncodeToString(sum); got != tt.hex {
			t.Errorf("%v(%q) = %s, want %s", tt.a, tt.input, got, tt.hex)
		}
		if got := tt.a.Format(sum); got != tt.field {
			t.Errorf("%v.Format(%v(%q)) = %q, want %q", tt.a, tt.a, tt.input, got, tt.field)
		}
		prefix := []byte("x ")
		if got := tt.a.AppendFormat(prefix, sum); string(got) != "x "+tt.field {
			t.Errorf("%v.AppendFormat(%q, ...) = %q, want %q", tt.a, prefix, got, "x "+tt.field)
		}
		a, got, err := digest.Parse(tt.field)
		if err != nil || a != tt.a || !bytes.Equal(got, sum) {
			t.Errorf("Parse(%q) = %v, %x, %v; want %v, %x, nil", tt.field, a, got, err, tt.a, sum)
		}
	}
}

// TestFormatParseRoundTrip checks Parse(Format(sum)), and Canonical, for sums other than the
// vectors, including all-zero and all-0xFF bytes, which exercise the ends of
// the alphabets.
func TestFormatParseRoundTrip(t *testing.T) {
	for _, a := range digest.Algorithms {
		for _, sum := range [][]byte{
			make([]byte, a.Size()),
			bytes.Repeat([]byte{0xFF}, a.Size()),
			sumOf(a, "The quick brown fox jumps over the lazy dog"),
		} {
			f := a.Format(sum)
			if len(f) != len(a.String())+1+a.EncodedLen() {
				t.Errorf("len(%v.Format(%x)) = %d, want %d", a, sum, len(f), len(a.String())+1+a.EncodedLen())
			}
			got, gotSum, err := digest.Parse(f)
			if err != nil || got != a || !bytes.Equal(gotSum, sum) {
				t.Errorf("Parse(%q) = %v, %x, %v; want %v, %x, nil", f, got, gotSum, err, a, sum)
			}
			if !digest.Canonical([]byte(f)) {
				t.Errorf("Canonical(%q) = false, Parse takes it", f)
			}
		}
	}
}

// TestParseRejects: each field Parse refuses, which Canonical refuses too.
func TestParseRejects(t *testing.T) {
	sha1B32 := "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
	md5Hex := "d41d8cd98f00b204e9800998ecf8427e"
	tests := []struct {
		name  string
		field string
	}{
		{"empty", ""},
		{"missing colon", "sha1" + sha1B32},
		{"empty label", ":" + sha1B32},
		{"empty value", "sha1:"},
		{"upper-case label", "SHA1:" + sha1B32},
		{"dashed label", "sha-1:" + sha1B32},
		{"dashed sha256 label", "sha-256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"unknown algorithm", "crc32:" + md5Hex[:8]},
		{"space in label", " sha1:" + sha1B32},
		{"sha1 lower-case base32", "sha1:" + strings.ToLower(sha1B32)},
		{"sha1 mixed-case base32", "sha1:" + sha1B32[:16] + strings.ToLower(sha1B32[16:])},
		{"sha1 hex", "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{"sha1 base64", "sha1:2jmj7l5rSw0yVb/vlWAYkK/YBwk="},
		{"sha1 one character short", "sha1:" + sha1B32[:31]},
		{"sha1 one character long", "sha1:" + sha1B32 + "A"},
		{"sha1 with digit outside base32", "sha1:" + sha1B32[:31] + "1"},
		{"sha1 padded to 32 characters", "sha1:" + sha1B32[:26] + "======"},
		{"sha1 padded to 32 characters with LF", "sha1:" + sha1B32[:24] + "\n\n\n\n\n\n\n\n"},
		{"sha1 with CRLF inside", "sha1:" + sha1B32[:30] + "\r\n"},
		{"sha1 trailing space", "sha1:" + sha1B32 + " "},
		{"md5 upper-case hex", "md5:" + strings.ToUpper(md5Hex)},
		{"md5 mixed-case hex", "md5:" + md5Hex[:31] + "E"},
		{"md5 base32", "md5:2QOYZWMPACZAJ2MABGMOZ6CCPY======"},
		{"md5 short", "md5:" + md5Hex[:30]},
		{"md5 odd length", "md5:" + md5Hex[:31]},
		{"md5 long", "md5:" + md5Hex + "00"},
		{"md5 non-hex", "md5:" + md5Hex[:31] + "g"},
		{"sha256 sha1 length", "sha256:da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{"sha256 upper-case hex", "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"},
		{"sha512 sha256 length", "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"sha512 base64", "sha512:z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="},
		{"two colons", "sha1::" + sha1B32[1:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, sum, err := digest.Parse(tt.field)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, %x, nil; want error", tt.field, a, sum)
			}
			if digest.Canonical([]byte(tt.field)) {
				t.Errorf("Canonical(%q) = true, Parse refuses it", tt.field)
			}
		})
	}
}

// TestParseValueError checks that a known label with a bad value is reported
// as ErrValue, so callers can tell it from an unknown algorithm.
func TestParseValueError(t *testing.T) {
	tests := []struct {
		field   string
		isValue bool
	}{
		{"sha1:3i42h3s6nnfq2msvx7xzkyaysccx5qbyj", true},
		{"md5:D41D8CD98F00B204E9800998ECF8427E", true},
		{"sha256:abc", true},
		{"crc32:00000000", false},
		{"SHA1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", false},
	}
	for _, tt := range tests {
		_, _, err := digest.Parse(tt.field)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error", tt.field)
			continue
		}
		if got := errors.Is(err, digest.ErrValue); got != tt.isValue {
			t.Errorf("Parse(%q) = %v; errors.Is(err, ErrValue) = %v, want %v", tt.field, err, got, tt.isValue)
		}
	}
}

func TestParseLabel(t *testing.T) {
	tests := []struct {
		label string
		want  digest.Algorithm // 0: error
	}{
		{"md5", digest.MD5},
		{"MD5", digest.MD5},
		{"sha1", digest.SHA1},
		{"SHA1", digest.SHA1},
		{"SHA-1", digest.SHA1},
		{"sha-1", digest.SHA1},
		{"sha256", digest.SHA256},
		{"SHA-256", digest.SHA256},
		{"sha512", digest.SHA512},
		{"Sha-512", digest.SHA512},
		{"", 0},
		{"sha", 0},
		{"sha2", 0},
		{"sha384", 0},
		{"crc32", 0},
		{"sha1 ", 0},
		{"sha_1", 0},
	}
	for _, tt := range tests {
		a, err := digest.ParseLabel(tt.label)
		if tt.want == 0 {
			if err == nil {
				t.Errorf("ParseLabel(%q) = %v, nil; want error", tt.label, a)
			}
			continue
		}
		if err != nil || a != tt.want {
			t.Errorf("ParseLabel(%q) = %v, %v; want %v, nil", tt.label, a, err, tt.want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	sha1Sum := mustHex("a9993e364706816aba3e25717850c26c9cd0d89d") // "abc"
	md5Sum := mustHex("900150983cd24fb0d6963f7d28e17f72")          // "abc"
	md5Empty := mustHex("d41d8cd98f00b204e9800998ecf8427e")        // ""
	sha256Sum := mustHex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
	sha512Sum := mustHex("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
	// A sum whose standard base64 holds both '+' and '/', so that base64url
	// spells it differently.
	urlSum := mustHex("fbefbefbefbefbefbefbefbefbefbefbefbefbef")
	if s := base64.StdEncoding.EncodeToString(urlSum); !strings.ContainsAny(s, "+/") {
		t.Fatalf("test sum's base64 %q has no '+' or '/'", s)
	}
	b32 := base32.StdEncoding.EncodeToString
	b32raw := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString
	tests := []struct {
		name  string
		value string
		a     digest.Algorithm
		sum   []byte
	}{
		{"sha1 manifest form", "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5", digest.SHA1, sha1Sum},
		{"SHA-1 lower-case base32", "SHA-1:vgmt4nsha2awvor6evyxqugcnsonbwe5", digest.SHA1, sha1Sum},
		{"sha1 mixed-case base32", "sha1:VGMT4NSHA2AWVOR6evyxqugcnsonbwe5", digest.SHA1, sha1Sum},
		{"sha1 lower-case hex", "sha1:a9993e364706816aba3e25717850c26c9cd0d89d", digest.SHA1, sha1Sum},
		{"sha1 upper-case hex", "sha1:A9993E364706816ABA3E25717850C26C9CD0D89D", digest.SHA1, sha1Sum},
		{"sha1 base64 padded", "sha1:" + base64.StdEncoding.EncodeToString(sha1Sum), digest.SHA1, sha1Sum},
		{"sha1 base64 unpadded", "sha1:" + base64.RawStdEncoding.EncodeToString(sha1Sum), digest.SHA1, sha1Sum},
		{"sha1 base64 with '+' and '/'", "sha1:" + base64.StdEncoding.EncodeToString(urlSum), digest.SHA1, urlSum},
		{"sha1 base64url padded", "sha1:" + base64.URLEncoding.EncodeToString(urlSum), digest.SHA1, urlSum},
		{"sha1 base64url unpadded", "sha1:" + base64.RawURLEncoding.EncodeToString(urlSum), digest.SHA1, urlSum},
		{"surrounding spaces", "  sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5 \t", digest.SHA1, sha1Sum},
		{"spaces around colon", "sha1 : VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5", digest.SHA1, sha1Sum},
		{"md5 hex", "md5:900150983cd24fb0d6963f7d28e17f72", digest.MD5, md5Sum},
		{"MD5 upper-case hex", "MD5:900150983CD24FB0D6963F7D28E17F72", digest.MD5, md5Sum},
		// md5 in hex and in padded base32 are both 32 characters.
		{"md5 base32 padded", "md5:" + b32(md5Sum), digest.MD5, md5Sum},
		{"md5 base32 unpadded", "md5:" + b32raw(md5Sum), digest.MD5, md5Sum},
		{"md5 of empty base32 padded", "md5:2QOYZWMPACZAJ2MABGMOZ6CCPY======", digest.MD5, md5Empty},
		{"md5 of empty hex", "md5:d41d8cd98f00b204e9800998ecf8427e", digest.MD5, md5Empty},
		{"md5 base64", "md5:" + base64.StdEncoding.EncodeToString(md5Sum), digest.MD5, md5Sum},
		{"md5 base64url", "md5:" + base64.RawURLEncoding.EncodeToString(md5Sum), digest.MD5, md5Sum},
		{"sha256 hex", "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", digest.SHA256, sha256Sum},
		{"sha-256 hex", "sha-256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", digest.SHA256, sha256Sum},
		{"SHA-256 base32", "SHA-256:" + b32(sha256Sum), digest.SHA256, sha256Sum},
		{"sha256 base64", "sha256:" + base64.StdEncoding.EncodeToString(sha256Sum), digest.SHA256, sha256Sum},
		{"sha512 hex", "sha512:" + hex.EncodeToString(sha512Sum), digest.SHA512, sha512Sum},
		{"sha-512 base64", "sha-512:" + base64.StdEncoding.EncodeToString(sha512Sum), digest.SHA512, sha512Sum},
		{"sha512 base32 unpadded", "sha512:" + b32raw(sha512Sum), digest.SHA512, sha512Sum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, sum, err := digest.ParseHeader(tt.value)
			if err != nil || a != tt.a || !bytes.Equal(sum, tt.sum) {
				t.Fatalf("ParseHeader(%q) = %v, %x, %v; want %v, %x, nil", tt.value, a, sum, err, tt.a, tt.sum)
			}
		})
	}
}

func TestParseHeaderRejects(t *testing.T) {
	md5Sum := mustHex("900150983cd24fb0d6963f7d28e17f72")
	tests := []struct {
		name  string
		value string
	}{
		{"empty", ""},
		{"garbage", "monkeypowah!"},
		{"no value", "sha1:"},
		{"only spaces after colon", "sha1:   "},
		{"no label", ":abc"},
		{"no label full sum", ":VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"},
		{"unknown algorithm", "crc32:352441c2"},
		{"sha384", "sha384:" + strings.Repeat("00", 48)},
		{"missing colon", "sha1VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"},
		{"sha1 base32 short", "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE"},
		{"sha1 hex short", "sha1:a9993e364706816aba3e25717850c26c9cd0d8"},
		{"sha1 value of an md5", "sha1:900150983cd24fb0d6963f7d28e17f72"},
		{"md5 value of a sha1", "md5:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"},
		{"md5 base64 of wrong length", "md5:" + base64.StdEncoding.EncodeToString(md5Sum[:15])},
		{"space inside value", "sha1:VGMT4NSHA2AWVOR6 EVYXQUGCNSONBWE5"},
		{"base64 mixing alphabets", "sha1:+_" + strings.Repeat("A", 25)},
		{"padding in the middle", "sha1:VGMT4NSHA2AWVOR6=EVYXQUGCNSONBWE5"},
		{"non-ASCII value", "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE\u017f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, sum, err := digest.ParseHeader(tt.value)
			if err == nil {
				t.Fatalf("ParseHeader(%q) = %v, %x, nil; want error", tt.value, a, sum)
			}
		})
	}
}

// TestParseHeaderAllEncodings encodes sums of every algorithm in every
// encoding ParseHeader documents and checks that each decodes to the sum.
// The sums exercise the ends of each alphabet, including a sum whose base32
// consists only of 'A', which is also a hex digit.
func TestParseHeaderAllEncodings(t *testing.T) {
	encodings := []struct {
		name   string
		encode func([]byte) string
	}{
		{"hex", hex.EncodeToString},
		{"HEX", func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }},
		{"base32", base32.StdEncoding.EncodeToString},
		{"base32 lower", func(b []byte) string { return strings.ToLower(base32.StdEncoding.EncodeToString(b)) }},
		{"base32 raw", base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString},
		{"base64", base64.StdEncoding.EncodeToString},
		{"base64 raw", base64.RawStdEncoding.EncodeToString},
		{"base64url", base64.URLEncoding.EncodeToString},
		{"base64url raw", base64.RawURLEncoding.EncodeToString},
	}
	for _, a := range digest.Algorithms {
		// A pattern of 5 bytes repeats every 8 base32 and a pattern of 3
		// bytes every 4 base64 characters.
		pattern := func(p ...byte) []byte { return bytes.Repeat(p, a.Size())[:a.Size()] }
		sums := [][]byte{
			pattern(0x00),                         // base32 "AAAA", also valid hex; hex "0000"
			pattern(0xFF),                         // base64 "////", base64url "____"
			pattern(0xFB, 0xEF, 0xBE),             // base64 "++++", base64url "----"
			pattern(0x00, 0x44, 0x32, 0x14, 0xC7), // base32 "ABCDEFGH"
			pattern(0x52, 0xD6, 0xF8, 0xFF, 0xFF), // base32 "KLLPR777"
			sumOf(a, "abc"),
		}
		for _, sum := range sums {
			for _, e := range encodings {
				v := a.String() + ":" + e.encode(sum)
				got, gotSum, err := digest.ParseHeader(v)
				if err != nil || got != a || !bytes.Equal(gotSum, sum) {
					t.Errorf("%s: ParseHeader(%q) = %v, %x, %v; want %v, %x, nil", e.name, v, got, gotSum, err, a, sum)
				}
			}
		}
	}
}

// TestParseHeaderManifestForm checks that every manifest digest is also a
// valid header value with the same meaning, so a manifest value can be
// copied into a revisit record and read back.
func TestParseHeaderManifestForm(t *testing.T) {
	for _, tt := range vectors {
		a, sum, err := digest.ParseHeader(tt.field)
		if err != nil || a != tt.a || hex.EncodeToString(sum) != tt.hex {
			t.Errorf("ParseHeader(%q) = %v, %x, %v; want %v, %s, nil", tt.field, a, sum, err, tt.a, tt.hex)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, tt := range vectors {
		f.Add(tt.field)
		f.Add(strings.ToUpper(tt.field))
		sum := mustHex(tt.hex)
		f.Add(tt.a.String() + ":" + tt.hex)
		f.Add(tt.a.String() + ":" + base32.StdEncoding.EncodeToString(sum))
		f.Add(tt.a.String() + ":" + base64.StdEncoding.EncodeToString(sum))
		f.Add(tt.a.String() + ":" + base64.RawURLEncoding.EncodeToString(sum))
	}
	for _, s := range []string{"", ":", "sha1:", ":abc", "monkeypowah!", "SHA-1: x ", "md5:====", "sha1:\n", "sha-256:\r\n",
		// Non-canonical values that decode: padding, skipped line breaks,
		// a non-ASCII letter that strings.ToUpper makes ASCII.
		"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSC======", "sha1:3I42H3S6NNFQ2MSVX7XZKYAY\n\n\n\n\n\n\n\n",
		"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY\u017f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		a, sum, err := digest.ParseHeader(v)
		if err == nil {
			if !a.Valid() {
				t.Fatalf("ParseHeader(%q) = invalid algorithm %d", v, int(a))
			}
			if len(sum) != a.Size() {
				t.Fatalf("ParseHeader(%q) = %v sum of %d bytes, want %d", v, a, len(sum), a.Size())
			}
		}
		// The strict form is a subset of the header forms, and canonical:
		// whatever Parse accepts, Format gives back unchanged.
		pa, psum, perr := digest.Parse(v)
		if perr != nil {
			return
		}
		if len(psum) != pa.Size() {
			t.Fatalf("Parse(%q) = %v sum of %d bytes, want %d", v, pa, len(psum), pa.Size())
		}
		if f := pa.Format(psum); f != v {
			t.Fatalf("Parse(%q) accepted a non-canonical value: Format gives %q", v, f)
		}
		if err != nil || a != pa || !bytes.Equal(sum, psum) {
			t.Fatalf("Parse(%q) = %v, %x but ParseHeader = %v, %x, %v", v, pa, psum, a, sum, err)
		}
	})
}

// TestCanonicalAsParse: Canonical takes a field exactly when Parse does,
// for each algorithm's digest with every byte value at every place
// (label, colon, value), with each length from none to one too long.
func TestCanonicalAsParse(t *testing.T) {
	for _, a := range digest.Algorithms {
		field := []byte(a.Format(sumOf(a, "a")))
		for at := range field {
			for c := range 256 {
				f := bytes.Clone(field)
				f[at] = byte(c)
				_, _, err := digest.Parse(string(f))
				if got := digest.Canonical(f); got != (err == nil) {
					t.Fatalf("Canonical(%q) = %v, Parse error %v", f, got, err)
				}
			}
		}
		for n := range len(field) + 2 {
			f := append(bytes.Clone(field), 'A')[:n]
			_, _, err := digest.Parse(string(f))
			if got := digest.Canonical(f); got != (err == nil) {
				t.Fatalf("Canonical(%q) = %v, Parse error %v", f, got, err)
			}
		}
	}
}
