package gzmulti

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestStream: the members' inflated bytes come one after another; damage
// stops the stream, again and again, until Resume, which goes on with the
// next member; a failed read of the file ends it for good.
func TestStream(t *testing.T) {
	m := func(s string) []byte { return klauspostMember(t, []byte(s), gzip.Header{}, gzip.DefaultCompression) }
	corrupt := m(strings.Repeat("lost ", 1000))
	for i := 20; i < 40; i++ {
		corrupt[i] ^= 0x55
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name string
		data []byte
		want string // inflated bytes, "[kind]" for each damage
	}{
		{"members", cat(m("one "), m(""), m("two")), "one two"},
		{"plain file", []byte("plain bytes"), "plain bytes"},
		{"empty file", nil, ""},
		{"garbage between members", cat(m("one "), []byte("junk"), m("two")), "one [" + ErrGarbage.Error() + "]two"},
		{"trailing garbage", cat(m("one"), []byte("junk")), "one[" + ErrGarbage.Error() + "]"},
		{"corrupt member", cat(m("one "), corrupt, m("two")), "one [" + ErrCorrupt.Error() + "]two"},
		{"clipped", m("one two three")[:15], "[" + ErrTruncated.Error() + "]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			z, err := NewReader(bytes.NewReader(tc.data), "f")
			if err != nil {
				t.Fatal(err)
			}
			s := NewStream(z)
			var got strings.Builder
			p := make([]byte, 7)
			for i := 0; ; i++ {
				if i > 10000 {
					t.Fatal("the stream does not end")
				}
				n, err := s.Read(p)
				got.Write(p[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					if !IsDamage(err) || s.Damage() != err {
						t.Fatalf("%v: not damage the stream stopped at", err)
					}
					if _, again := s.Read(p); again != err {
						t.Fatalf("Read after damage: %v, want %v again", again, err)
					}
					for _, k := range []error{ErrGarbage, ErrCorrupt, ErrTruncated, ErrChecksum} {
						if errors.Is(err, k) {
							fmt.Fprintf(&got, "[%v]", k)
						}
					}
					s.Resume()
				}
			}
			if got.String() != tc.want {
				t.Errorf("got %q, want %q", got.String(), tc.want)
			}
		})
	}
}

// failingReader fails after its bytes.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		err = os.ErrDeadlineExceeded
	}
	return n, err
}

func TestStreamReadErrorEnds(t *testing.T) {
	data := klauspostMember(t, []byte(strings.Repeat("x", 100)), gzip.Header{}, gzip.DefaultCompression)
	z, err := NewReader(failingReader{bytes.NewReader(data[:len(data)/2])}, "f")
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream(z)
	_, err = io.ReadAll(s)
	if err == nil || IsDamage(err) || s.Damage() != nil {
		t.Fatalf("ReadAll: %v (damage %v), want a read error", err, s.Damage())
	}
	s.Resume()
	if _, again := s.Read(make([]byte, 1)); again != err {
		t.Errorf("after Resume: %v, want %v", again, err)
	}
}
