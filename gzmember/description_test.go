package gzmember

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/zeebo/blake3"

	"warcdedup/gzmulti"
)

// someMember is a gzip member (Go's writer: describing does not care which)
// with the header given, and its payload.
func someMember(t testing.TB, hdr []byte, payload []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	b.Write(hdr)
	fw := newFlateWriter(t, &b)
	fw.Write(payload)
	fw.Close()
	b.Write(crc32le(payload))
	return b.Bytes()
}

// TestDescriber: the description of a member is its header as stored,
// its length, the CRC-32 of its first bytes and the BLAKE3 of all of
// them, whatever the pieces it is written in and whatever follows it.
func TestDescriber(t *testing.T) {
	for _, h := range headers {
		for _, n := range []int{0, 100, 5000, 200 << 10} {
			payload := textPayload(uint64(n), n)
			m := someMember(t, h.h.bytes(), payload)
			if !bytes.Equal(readMember(t, m), payload) {
				t.Fatal("the test's member does not inflate to its payload")
			}
			want := Description{Length: int64(len(m)), Header: h.h.bytes(), Prefix: crc32.ChecksumIEEE(m[:min(len(m), PrefixLength)]), Sum: blake3.Sum256(m)}
			for _, piece := range []int{1, 3, 4096, 1 << 20} {
				d := NewDescriber(int64(len(m)))
				// The member, then the start of the next one, as a reader
				// that reads ahead gives them.
				all := append(bytes.Clone(m), m...)
				for p := all; len(p) > 0; {
					k := min(piece, len(p))
					if n, err := d.Write(p[:k]); n != k || err != nil {
						t.Fatalf("Write: %d, %v", n, err)
					}
					p = p[k:]
				}
				got, err := d.Description()
				if err != nil {
					t.Fatalf("%s, %d bytes in pieces of %d: %v", h.name, len(m), piece, err)
				}
				if !equal(got, want) {
					t.Fatalf("%s, %d bytes in pieces of %d: %+v, want %+v", h.name, len(m), piece, got, want)
				}
			}
		}
	}
}

func equal(a, b Description) bool {
	return a.Length == b.Length && bytes.Equal(a.Header, b.Header) && a.Prefix == b.Prefix && a.Sum == b.Sum && a.Hash == b.Hash
}

// TestDescriberRefuses: what is not a whole gzip member with a header of
// reasonable size gets no description, and says why.
func TestDescriberRefuses(t *testing.T) {
	m := someMember(t, headers[0].h.bytes(), textPayload(1, 1000))
	long := header{os: 3, extra: bytes.Repeat([]byte{'x'}, MaxHeader)}.bytes()
	cases := []struct {
		name   string
		length int64
		bytes  []byte
		want   string
	}{
		{"fewer bytes than its length", int64(len(m)), m[:len(m)-1], "were read"},
		{"no length", 0, m, "a length of 0"},
		{"plain WARC", 100, []byte(strings.Repeat("WARC/1.0\r\n", 10)), "not a gzip member"},
		{"header longer than MaxHeader", int64(len(long) + 20), append(long, make([]byte, 20)...), "longer than 1024"},
		{"ends in its header", 12, []byte{0x1f, 0x8b, 8, flagName, 0, 0, 0, 0, 0, 3, 'a', 'b'}, "end inside its header"},
		{"no room for a trailer", 15, append(headers[0].h.bytes(), 3, 0, 0, 0, 0), "no room"},
		{"reserved flags", int64(len(m)), append([]byte{0x1f, 0x8b, 8, 0x20}, m[4:]...), "reserved flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDescriber(tc.length)
			d.Write(tc.bytes)
			_, err := d.Description()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestTeeUnderGzmulti: a member described as gzmulti reads it through Tee
// from a section that goes on past it (the rewrite's look-ahead) is
// described as from its own bytes: one read serves both.
func TestTeeUnderGzmulti(t *testing.T) {
	m1 := someMember(t, headers[2].h.bytes(), textPayload(1, 300<<10))
	m2 := someMember(t, headers[0].h.bytes(), textPayload(2, 1000))
	file := append(append([]byte("junk before"), m1...), m2...)
	at := int64(len("junk before"))
	d := NewDescriber(int64(len(m1)))
	z, err := gzmulti.NewReader(d.Tee(io.NewSectionReader(bytes.NewReader(file), at, int64(len(m1))+64<<10)), "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, z); err != nil {
		t.Fatal(err)
	}
	got, err := d.Description()
	if err != nil {
		t.Fatal(err)
	}
	if want := describe(t, m1); !equal(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}

	t.Run("a seek that moves fails the description", func(t *testing.T) {
		d := NewDescriber(int64(len(m1)))
		r := d.Tee(io.NewSectionReader(bytes.NewReader(m1), 0, int64(len(m1))))
		io.CopyN(io.Discard, r, 100)
		r.Seek(10, io.SeekStart)
		io.Copy(io.Discard, r)
		if _, err := d.Description(); err == nil || !strings.Contains(err.Error(), "moved") {
			t.Fatalf("%v, want an error: the reader moved", err)
		}
	})
}

// TestTextRoundTrip: the text form is one token of URL-safe characters
// that parses back to the same description, for every header form.
func TestTextRoundTrip(t *testing.T) {
	for _, h := range headers {
		m := someMember(t, h.h.bytes(), textPayload(3, 2000))
		d := describe(t, m)
		s := d.String()
		if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			t.Fatalf("%q has characters outside [A-Za-z0-9._-]", s)
		}
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !equal(got, d) {
			t.Fatalf("%s parses to %+v, want %+v", s, got, d)
		}
		var u Description
		if err := u.UnmarshalText([]byte(s)); err != nil || !equal(u, d) {
			t.Fatalf("UnmarshalText: %v", err)
		}
		if b, _ := d.MarshalText(); string(b) != s {
			t.Fatalf("MarshalText %q, String %q", b, s)
		}
		if h.name == "zlib gzip wrapper" {
			t.Logf("%d bytes: %s", len(s), s)
		}
	}
}

// TestParseErrors: a text that is not a description, cut or altered, is an
// error naming the part at fault.
func TestParseErrors(t *testing.T) {
	d := describe(t, someMember(t, headers[0].h.bytes(), textPayload(3, 2000)))
	good := d.String()
	parts := strings.Split(good, ".")
	with := func(i int, v string) string {
		p := append([]string(nil), parts...)
		p[i] = v
		return strings.Join(p, ".")
	}
	b64of := func(b []byte) string { return b64.EncodeToString(b) }
	cases := []struct {
		name, text, part string
	}{
		{"empty", "", "form"},
		{"garbage", "hello world", "form"},
		{"a dash (the log's none)", "-", "form"},
		{"another version", with(0, "gz3"), "form"},
		{"a field missing", strings.Join(parts[:4], "."), "form"},
		{"a field more", good + ".AAAA", "form"},
		{"length zero", with(1, "0"), "length"},
		{"length with a leading zero", with(1, "0"+parts[1]), "length"},
		{"length signed", with(1, "+"+parts[1]), "length"},
		{"length not a number", with(1, "12a"), "length"},
		{"length out of range", with(1, "99999999999999999999"), "length"},
		{"length too short for its header", with(1, "19"), "length"},
		{"header not base64url", with(2, "H4sI+AAAAAAAAw"), "header"},
		{"header padded", with(2, parts[2]+"=="), "header"},
		{"header not gzip", with(2, b64of([]byte("WARC/1.0\r\nWARC"))), "header"},
		{"header cut", with(2, b64of(headers[0].h.bytes()[:9])), "header"},
		{"header with bytes after it", with(2, b64of(append(headers[0].h.bytes(), 0))), "header"},
		{"header name without NUL", with(2, b64of([]byte{0x1f, 0x8b, 8, flagName, 0, 0, 0, 0, 0, 3, 'a'})), "header"},
		{"header longer than MaxHeader", with(2, b64of(header{extra: make([]byte, MaxHeader)}.bytes())), "header"},
		{"prefix cut", with(3, parts[3][:5]), "prefix"},
		{"prefix not canonical", with(3, parts[3][:5]+"B"), "prefix"},
		{"sum cut", with(4, parts[4][:42]), "sum"},
		{"sum in hex", with(4, strings.Repeat("ab", 32)), "sum"},
		{"sum with a space", with(4, parts[4][:20]+" "+parts[4][21:]), "sum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %v, want a *SyntaxError", tc.text, err)
			}
			if se.Part != tc.part {
				t.Fatalf("Parse(%q): %v: part %q, want %q", tc.text, err, se.Part, tc.part)
			}
		})
	}
	// Every cut of a good text is an error, never another description.
	for i := range len(good) {
		if _, err := Parse(good[:i]); err == nil {
			t.Fatalf("Parse(%q) (cut at %d) succeeded", good[:i], i)
		}
	}
}

// FuzzParse: no text panics the parser, and what parses prints back as
// the same text (the form is canonical) and reparses to the same.
func FuzzParse(f *testing.F) {
	for _, h := range headers {
		f.Add(describeSeed(f, h.h.bytes()))
	}
	f.Add("gz1.20.H4sIAAAAAAAAAw.AAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("gz1..H4sIAAAAAAAAAw..")
	f.Add("-")
	f.Add("gz1.1.....")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %T %v, want a *SyntaxError", s, err, err)
			}
			return
		}
		if d.String() != s {
			t.Fatalf("Parse(%q) prints back as %q", s, d.String())
		}
		if err := checkHeader(d.Header); err != nil || len(d.Header) > MaxHeader {
			t.Fatalf("Parse(%q) accepted the header %x: %v", s, d.Header, err)
		}
	})
}

func describeSeed(f *testing.F, hdr []byte) string {
	m := someMember(f, hdr, textPayload(1, 500))
	d := NewDescriber(int64(len(m)))
	d.Write(m)
	desc, err := d.Description()
	if err != nil {
		f.Fatal(err)
	}
	return desc.String()
}
