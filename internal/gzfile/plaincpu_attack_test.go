package gzfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// member is text compressed as one gzip member by a Writer.
func member(t testing.TB, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	if _, err := io.WriteString(w, text); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readFile reads data as a manifest file through Open.
func readFile(t *testing.T, data []byte) (string, error) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "before.manifest")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	return string(got), err
}

// TestMembersCutOrDamaged proves that a listing of gzip members (a file a
// member, warcsum.Runner.Gzip) cut anywhere inside a member, the last one
// included, is refused naming the file, never read as a shorter manifest;
// and that bytes after, between or inside members are refused too, while
// an empty member (a file of no lines) reads as nothing.
func TestMembersCutOrDamaged(t *testing.T) {
	a := strings.Repeat("a.warc.gz 1234 567 http://example.com/a 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n", 300)
	b := strings.Repeat("b.warc.gz 99 12 http://example.com/b 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n", 300)
	ma, mb, empty := member(t, a), member(t, b), member(t, "")
	whole := append(append(bytes.Clone(ma), empty...), mb...)
	boundaries := map[int]bool{len(ma): true, len(ma) + len(empty): true}
	t.Run("cut at every byte", func(t *testing.T) {
		// From 3 bytes on: fewer are no gzip magic and read as plain
		// text, as before the merge, which holds a control byte that
		// manifest.Parse refuses.
		for cut := 3; cut < len(whole); cut++ {
			got, err := readFile(t, whole[:cut])
			if boundaries[cut] {
				// A cut at a member boundary is a whole gzip file of
				// the members before it: the listing is committed by
				// rename, whole or not at all, for that.
				if err != nil || got != a {
					t.Errorf("cut at the boundary %d: %d bytes, %v", cut, len(got), err)
				}
				continue
			}
			if err == nil {
				t.Fatalf("cut at %d of %d: read %d bytes without an error", cut, len(whole), len(got))
			}
			if !strings.Contains(err.Error(), "before.manifest") {
				t.Errorf("cut at %d: error %q does not name the file", cut, err)
			}
		}
	})
	for _, tc := range []struct {
		name    string
		data    []byte
		want    string
		wantErr bool
	}{
		{"members, an empty one between", whole, a + b, false},
		{"an empty member last", append(bytes.Clone(whole), empty...), a + b, false},
		{"only an empty member", empty, "", false},
		{"a thousand empty members around each (files of no lines)", func() []byte {
			many := bytes.Repeat(empty, 1000)
			return append(append(append(append(bytes.Clone(many), ma...), many...), mb...), many...)
		}(), a + b, false},
		{"members of one line each", func() []byte {
			var d []byte
			for _, l := range strings.SplitAfter(a, "\n") {
				d = append(d, member(t, l)...)
			}
			return d
		}(), a, false},
		{"zero bytes after the last member", append(bytes.Clone(whole), 0, 0, 0, 0), "", true},
		{"one zero byte after the last member", append(bytes.Clone(whole), 0), "", true},
		{"a magic's first bytes after the last member", append(bytes.Clone(whole), 0x1f, 0x8b), "", true},
		{"a whole header, no data, after the last member", append(bytes.Clone(whole), empty[:10]...), "", true},
		{"the last member's size field wrong", func() []byte {
			d := bytes.Clone(whole)
			d[len(d)-1] ^= 0x40
			return d
		}(), "", true},
		{"a bit flipped in the first member's data", func() []byte {
			d := bytes.Clone(whole)
			d[len(ma)/2] ^= 0x10
			return d
		}(), "", true},
		{"the first member's trailer gone", append(bytes.Clone(ma[:len(ma)-8]), mb...), "", true},
		{"plain text after the last member", append(bytes.Clone(whole), "c.warc.gz 1 2 u d sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n"...), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFile(t, tc.data)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v (read %d bytes)", err, tc.wantErr, len(got))
			}
			if err != nil && !strings.Contains(err.Error(), "before.manifest") {
				t.Errorf("error %q does not name the file", err)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("read %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
}

// failAfter takes n bytes, then fails every write, as a full disk does.
type failAfter struct {
	w io.Writer
	n int
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestWriterPoolAfterFailure proves that a compressor whose stream failed
// (its writer full at the header, in the data, at the trailer; or a Writer
// dropped unclosed) leaves no state to the Writers after it: each writes
// what a fresh compressor writes, byte for byte, and reads back as its own
// text, on many goroutines at once (run with -race).
func TestWriterPoolAfterFailure(t *testing.T) {
	fresh := func(text string) []byte {
		var b bytes.Buffer
		z, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		z.Write([]byte(text))
		z.Close()
		return b.Bytes()
	}
	texts := []string{
		strings.Repeat("first.warc.gz 1 2 http://a/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n", 3000),
		"short\n",
		"",
		strings.Repeat("zzzz", 70000),
	}
	whole := len(fresh(texts[0]))
	for _, tc := range []struct {
		name  string
		spoil func()
	}{
		{"full at the header", func() {
			w := NewWriter(&failAfter{w: io.Discard, n: 0})
			w.Write([]byte(texts[0]))
			if w.Close() == nil {
				t.Error("Close after a failed header: no error")
			}
		}},
		{"full in the data", func() {
			w := NewWriter(&failAfter{w: io.Discard, n: whole / 2})
			w.Write([]byte(texts[0]))
			if w.Close() == nil {
				t.Error("Close after a failed write: no error")
			}
		}},
		{"full at the trailer", func() {
			w := NewWriter(&failAfter{w: io.Discard, n: whole - 4})
			w.Write([]byte(texts[0]))
			if w.Close() == nil {
				t.Error("Close with the trailer unwritten: no error")
			}
		}},
		{"dropped unclosed", func() {
			w := NewWriter(io.Discard)
			w.Write([]byte(texts[3]))
		}},
		{"closed twice, written after", func() {
			w := NewWriter(io.Discard)
			w.Write([]byte(texts[3]))
			w.Close()
			w.Close()
			w.Write([]byte("late"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 8 {
						if (g+i)%3 == 0 {
							tc.spoil()
						}
						text := texts[(g+i)%len(texts)]
						got := member(t, text)
						if want := fresh(text); !bytes.Equal(got, want) {
							errs <- fmt.Errorf("a pooled compressor wrote %d bytes, a fresh one %d", len(got), len(want))
							return
						}
						r, err := NewReader(bytes.NewReader(got), "m")
						if err != nil {
							errs <- err
							return
						}
						if back, err := io.ReadAll(r); err != nil || string(back) != text {
							errs <- fmt.Errorf("read back %d bytes, %v; want %d", len(back), err, len(text))
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// FuzzMembersAsGzip proves that whatever bytes a manifest file holds, the
// member stream reads what compress/gzip (klauspost's, multistream, as
// gzfile read before the merge) reads, or refuses it: never other text,
// never a part of it without an error. Where compress/gzip takes it and
// the stream refuses it, the bytes must hold damage compress/gzip lets by
// (none is known: the test says so if it finds one).
func FuzzMembersAsGzip(f *testing.F) {
	a := member(f, strings.Repeat("a.warc.gz 1 2 http://a/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n", 20))
	b := member(f, "b\n")
	empty := member(f, "")
	f.Add(append(append(bytes.Clone(a), empty...), b...))
	f.Add(append(bytes.Clone(a), b[:len(b)-3]...))
	f.Add(append(bytes.Clone(b), 0, 0))
	f.Add(bytes.Clone(empty))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || !bytes.Equal(data[:3], []byte{0x1f, 0x8b, 0x08}) {
			return // plain text, read as it is
		}
		r, err := NewReader(bytes.NewReader(data), "m")
		var got []byte
		if err == nil {
			got, err = io.ReadAll(r)
		}
		var want []byte
		z, werr := gzip.NewReader(bytes.NewReader(data))
		if werr == nil {
			want, werr = io.ReadAll(z)
		}
		switch {
		case err == nil && werr != nil:
			t.Fatalf("the stream read %d bytes without an error where compress/gzip says %v", len(got), werr)
		case err == nil && !bytes.Equal(got, want):
			t.Fatalf("the stream read %q, compress/gzip %q", got, want)
		}
	})
}
