package gzmulti

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"warcdedup/internal/corpustest"

	"github.com/klauspost/compress/gzip"
)

// ---- 1. Members: well-formed files ----

func TestMembers(t *testing.T) {
	extra := []byte{'A', 'B', 4, 0, 1, 2, 3, 4} // one subfield "AB" of 4 bytes
	type file struct {
		name  string
		build func(t *testing.T, b *builder)
	}
	files := []file{
		{"klauspost members at every level", func(t *testing.T, b *builder) {
			for i, level := range []int{gzip.BestSpeed, 3, gzip.DefaultCompression, gzip.BestCompression, gzip.NoCompression, gzip.HuffmanOnly} {
				p := textPayload(uint64(i), 3000+i*700)
				b.member(klauspostMember(t, p, gzip.Header{}, level), p, 10)
			}
		}},
		{"klauspost members with FNAME FCOMMENT FEXTRA", func(t *testing.T, b *builder) {
			p := textPayload(1, 5000)
			b.member(klauspostMember(t, p, gzip.Header{Name: "record.warc", Comment: "a comment", Extra: extra}, gzip.DefaultCompression), p, 0)
			p = textPayload(2, 1)
			b.member(klauspostMember(t, p, gzip.Header{Name: "second"}, gzip.DefaultCompression), p, 0)
			b.member(klauspostMember(t, nil, gzip.Header{Comment: "empty with a comment", Extra: extra}, gzip.DefaultCompression), nil, 0)
		}},
		{"standard library members with FNAME FCOMMENT FEXTRA", func(t *testing.T, b *builder) {
			p := textPayload(3, 10000)
			b.member(stdMember(t, p, stdgzip.Header{Name: "a", Comment: "ç latin-1 comment", Extra: extra}), p, 0)
			p = randomPayload(4, 777)
			b.member(stdMember(t, p, stdgzip.Header{}), p, 0)
			b.member(stdMember(t, nil, stdgzip.Header{Name: "empty"}), nil, 0)
		}},
		{"hand-made members with FHCRC and every other header field", func(t *testing.T, b *builder) {
			p := textPayload(5, 4000)
			m, h := handMember(t, p, hdrOpts{hcrc: true})
			b.member(m, p, h)
			m, h = handMember(t, p, hdrOpts{text: true, hcrc: true, extra: extra, name: "n.warc", comment: "c"})
			b.member(m, p, h)
			m, h = handMember(t, p, hdrOpts{extra: []byte{}, name: "empty extra"})
			b.member(m, p, h)
			m, h = handMember(t, p, hdrOpts{extra: bytes.Repeat([]byte{0x1f, 0x8b, 8}, 20000)}) // 60 KB extra full of magic
			b.member(m, p, h)
			m, h = handMember(t, p, hdrOpts{stored: true, hcrc: true})
			b.member(m, p, h)
		}},
		{"empty members of every kind", func(t *testing.T, b *builder) {
			b.member(minimalEmptyMember, nil, 10)
			b.member(storedEmptyMember, nil, 10)
			b.member(klauspostMember(t, nil, gzip.Header{}, gzip.DefaultCompression), nil, 10)
			b.member(klauspostMember(t, nil, gzip.Header{}, gzip.NoCompression), nil, 10)
			b.member(stdMember(t, nil, stdgzip.Header{}), nil, 10)
			m, h := handMember(t, nil, hdrOpts{hcrc: true, name: "x"})
			b.member(m, nil, h)
			b.member(minimalEmptyMember, nil, 10)
		}},
		{"a member of 0 bytes payload between full ones", func(t *testing.T, b *builder) {
			p := textPayload(6, 2000)
			b.member(klauspostMember(t, p, gzip.Header{}, 6), p, 10)
			b.member(klauspostMember(t, []byte{}, gzip.Header{}, 6), []byte{}, 10)
			b.member(klauspostMember(t, p, gzip.Header{}, 6), p, 10)
		}},
		{"2000 tiny members", func(t *testing.T, b *builder) {
			for i := range 2000 {
				p := textPayload(uint64(i), i%7+1)
				if i%3 == 0 {
					b.member(stdMember(t, p, stdgzip.Header{}), p, 10)
				} else {
					b.member(klauspostMember(t, p, gzip.Header{}, i%10), p, 10)
				}
			}
		}},
		{"one member of 10 MB incompressible data between small ones", func(t *testing.T, b *builder) {
			small := textPayload(7, 100)
			b.member(klauspostMember(t, small, gzip.Header{}, 6), small, 10)
			p := randomPayload(8, 10<<20)
			b.member(klauspostMember(t, p, gzip.Header{}, gzip.DefaultCompression), p, 10)
			b.member(klauspostMember(t, small, gzip.Header{}, 6), small, 10)
		}},
		{"members of 300 KB straddling the read buffer", func(t *testing.T, b *builder) {
			for i := range 4 {
				p := textPayload(uint64(10+i), 300<<10)
				if i%2 == 1 {
					p = randomPayload(uint64(10+i), 300<<10)
				}
				b.member(klauspostMember(t, p, gzip.Header{}, 1), p, 10)
			}
		}},
		// Members that expand far beyond the read buffers.
		{"members of 1 MB compressed 1000 to 1 between small ones", func(t *testing.T, b *builder) {
			small := textPayload(20, 300)
			for i := range 3 {
				b.member(klauspostMember(t, small, gzip.Header{}, 6), small, 10)
				p := bytes.Repeat([]byte{'a' + byte(i)}, 1<<20)
				b.member(klauspostMember(t, p, gzip.Header{}, gzip.BestCompression), p, 10)
			}
			b.member(klauspostMember(t, small, gzip.Header{}, 6), small, 10)
		}},
		{"members written by gzmulti.Writer", func(t *testing.T, b *builder) {
			var out bytes.Buffer
			w := NewWriter(&out, gzip.DefaultCompression)
			var payloads [][]byte
			for i := range 50 {
				p := textPayload(uint64(100+i), i*311)
				if i%5 == 0 {
					p = randomPayload(uint64(i), 5000)
				}
				if _, err := w.Write(p); err != nil {
					t.Fatal(err)
				}
				if _, err := w.CloseMember(); err != nil {
					t.Fatal(err)
				}
				payloads = append(payloads, p)
			}
			// Split the output into members with the standard library,
			// which stops at each member's end, to know the lengths.
			data := out.Bytes()
			r := bytes.NewReader(data)
			for _, p := range payloads {
				start := len(data) - r.Len()
				zr, err := stdgzip.NewReader(r)
				if err != nil {
					t.Fatal(err)
				}
				zr.Multistream(false)
				got, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(got, p) {
					t.Fatalf("standard library disagrees on member at %d: %v", start, err)
				}
				b.member(data[start:len(data)-r.Len()], p, 10)
			}
		}},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			var b builder
			f.build(t, &b)
			data := b.bytes()
			for _, bufSize := range []int{1 << 16, 1000, 1} {
				if bufSize == 1 && len(data) > 1<<20 {
					continue
				}
				for _, name := range []string{"x.warc.gz", "gzip-named.warc"} {
					z, steps := readFile(t, data, name, bufSize)
					if !z.Compressed() {
						t.Fatalf("Compressed() is false for a gzip file named %s", name)
					}
					if z.Name() != name {
						t.Errorf("Name() = %q, want %q", z.Name(), name)
					}
					checkSteps(t, steps, wantsOf(b.parts))
				}
			}
		})
	}
}

// The offsets a Reader reports address members: copying Length bytes from
// Offset gives a valid single-member gzip file holding the same data.
func TestMemberOffsetsAddressMembers(t *testing.T) {
	var b builder
	for i := range 20 {
		p := textPayload(uint64(i), 1000*i)
		b.member(klauspostMember(t, p, gzip.Header{Name: "r"}, 6), p, 0)
	}
	data := b.bytes()
	_, steps := readFile(t, data, "f.warc.gz", 4096)
	if len(steps) != 20 {
		t.Fatalf("got %d members, want 20", len(steps))
	}
	for i, s := range steps {
		one := data[s.final.Offset : s.final.Offset+s.final.Length]
		zr, err := stdgzip.NewReader(bytes.NewReader(one))
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, s.data) {
			t.Errorf("member %d at %+v does not decompress alone to its data: %v", i, s.final, err)
		}
	}
}

// Members skipped without Read are read and checked by Next.
func TestNextWithoutRead(t *testing.T) {
	var b builder
	for i := range 5 {
		p := textPayload(uint64(i), 20000)
		b.member(klauspostMember(t, p, gzip.Header{}, 6), p, 10)
	}
	data := b.bytes()
	z, err := NewReader(bytes.NewReader(data), "f")
	if err != nil {
		t.Fatal(err)
	}
	var got []Member
	bounded(t, "Next without Read", func() {
		for range 10 {
			m, err := z.Next()
			if err != nil {
				break
			}
			got = append(got, m)
		}
	})
	if len(got) != 5 {
		t.Fatalf("got %d members, want 5", len(got))
	}
	for i, m := range got {
		if m.Offset != b.parts[i].off {
			t.Errorf("member %d at %d, want %d", i, m.Offset, b.parts[i].off)
		}
	}
}

// Read with an empty buffer returns at once and leaves the member intact.
func TestReadEmptyBuffer(t *testing.T) {
	p := textPayload(1, 100000)
	data := klauspostMember(t, p, gzip.Header{}, 6)
	z, err := NewReader(bytes.NewReader(data), "f")
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var rerr error
	bounded(t, "Read with empty buffers", func() {
		if _, rerr = z.Next(); rerr != nil {
			return
		}
		buf := make([]byte, 1000)
		for {
			if n, err := z.Read(buf[:0]); n != 0 || err != nil {
				rerr = errors.New("Read of an empty buffer returned data or an error")
				return
			}
			n, err := z.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				return
			}
			if err != nil {
				rerr = err
				return
			}
		}
	})
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bytes.Equal(got, p) {
		t.Errorf("got %d bytes, want the member's %d", len(got), len(p))
	}
}

// A reader that returns one byte at a time, and one that returns data with
// io.EOF, change nothing.
func TestAwkwardSourceReaders(t *testing.T) {
	var b builder
	for i := range 3 {
		p := textPayload(uint64(i), 5000)
		b.member(klauspostMember(t, p, gzip.Header{}, 6), p, 10)
	}
	b.raw([]byte("xx"))
	p := textPayload(9, 10)
	b.member(klauspostMember(t, p, gzip.Header{}, 6), p, 10)
	data := b.bytes()
	wants := wantsOf(b.parts[:3])
	wants = append(wants, want{off: b.parts[2].off + b.parts[2].length, nextErr: ErrGarbage, msg: "2 bytes skipped"}, ok(b.parts[3]))
	for _, tc := range []struct {
		name string
		r    func() io.Reader
	}{
		{"one byte per Read", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }},
		{"data with io.EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, err := NewReader(tc.r(), "f")
			if err != nil {
				t.Fatal(err)
			}
			var steps []step
			bounded(t, tc.name, func() {
				for range 20 {
					m, err := z.Next()
					if err == io.EOF {
						return
					}
					s := step{m: m, nextErr: err}
					if err == nil {
						s.data, s.readErr = io.ReadAll(z)
						s.final = z.Member()
					}
					steps = append(steps, s)
				}
			})
			checkSteps(t, steps, wants)
		})
	}
}

// A read error of the file is returned, not taken for damage or io.EOF.
func TestSourceReadError(t *testing.T) {
	p := textPayload(1, 300000)
	data := klauspostMember(t, p, gzip.Header{}, 6)
	boom := errors.New("disk on fire")
	z, err := NewReader(io.MultiReader(bytes.NewReader(data[:len(data)/2]), iotest.ErrReader(boom)), "f")
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	bounded(t, "read error", func() {
		if _, err := z.Next(); err != nil {
			rerr = err
			return
		}
		_, rerr = io.ReadAll(z)
	})
	if !errors.Is(rerr, boom) {
		t.Errorf("got %v, want the read error", rerr)
	}
	if _, err := NewReader(iotest.ErrReader(boom), "f"); !errors.Is(err, boom) {
		t.Errorf("NewReader on a failing file: %v, want the read error", err)
	}
}

// ---- 1b. Plain files ----

func TestPlain(t *testing.T) {
	warc := []byte("WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n")
	big := bytes.Repeat(textPayload(1, 1000), 700) // 700 KB, beyond the read buffer
	for _, tc := range []struct {
		name string
		file string
		data []byte
	}{
		{"a plain WARC", "a.warc", warc},
		{"a plain file named .gz is still plain", "a.warc.gz", warc},
		{"a plain file larger than the read buffer", "big.arc", big},
		{"a one-byte file", "one.warc.gz", []byte{0x1f}},
		{"a file holding only the first two magic bytes", "two.warc.gz", []byte{0x1f, 0x8b}},
		{"gzip magic with a method other than deflate", "m.gz", append([]byte{0x1f, 0x8b, 7, 0}, warc...)},
		{"binary bytes", "b", randomPayload(3, 5000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, bufSize := range []int{1, 100, 1 << 20} {
				z, steps := readFile(t, tc.data, tc.file, bufSize)
				if z.Compressed() {
					t.Fatal("Compressed() is true for a plain file")
				}
				checkSteps(t, steps, []want{{off: 0, length: int64(len(tc.data)), payload: tc.data}})
				// Next goes on returning io.EOF.
				if m, err := z.Next(); err != io.EOF {
					t.Errorf("Next after the end: %+v, %v; want io.EOF", m, err)
				}
				if n, err := z.Read(make([]byte, 10)); n != 0 || err != io.EOF {
					t.Errorf("Read after the end: %d, %v; want 0, io.EOF", n, err)
				}
			}
		})
	}
	t.Run("an empty file has no member", func(t *testing.T) {
		z, steps := readFile(t, nil, "empty.warc.gz", 10)
		if z.Compressed() {
			t.Error("Compressed() is true for an empty file")
		}
		checkSteps(t, steps, nil)
		if _, err := z.Next(); err != io.EOF {
			t.Errorf("Next again: %v, want io.EOF", err)
		}
	})
	t.Run("Read before Next returns io.EOF", func(t *testing.T) {
		z, err := NewReader(bytes.NewReader(warc), "a.warc")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := z.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Errorf("Read before Next: %d, %v", n, err)
		}
	})
}

// ---- real files ----

// Every member of the small real .warc.gz/.arc.gz files that a plain
// multistream reader accepts is found, back to back from offset 0 to the end.
func TestCorpusFiles(t *testing.T) {
	files := corpusFiles(t, 1<<30)
	if len(files) == 0 {
		corpustest.Missing(t, "no corpus at ../../shared/corpus")
	}
	checked := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			continue
		}
		want, err := io.ReadAll(zr)
		if err != nil {
			continue // deliberately broken: not a case for this test
		}
		rel, _ := filepath.Rel(corpusDir, path)
		t.Run(rel, func(t *testing.T) {
			_, steps := readFile(t, data, path, 1<<16)
			var got []byte
			next := int64(0)
			for i, s := range steps {
				if s.nextErr != nil || s.readErr != nil {
					t.Fatalf("step %d: %v", i, s)
				}
				if s.final.Offset != next {
					t.Errorf("member %d at %d, want %d (right after the previous one)", i, s.final.Offset, next)
				}
				next = s.final.Offset + s.final.Length
				got = append(got, s.data...)
			}
			if next != int64(len(data)) {
				t.Errorf("members end at %d, file at %d", next, len(data))
			}
			if !bytes.Equal(got, want) {
				t.Errorf("members hold %d bytes, the file %d", len(got), len(want))
			}
		})
		checked++
	}
	if checked == 0 {
		t.Error("no corpus file was readable")
	}
}

const corpusDir = "../../shared/corpus"

// corpusFiles lists the .warc.gz and .arc.gz files of the shared corpus no
// larger than maxSize bytes, or none if it is absent.
func corpusFiles(t testing.TB, maxSize int64) []string {
	var files []string
	filepath.WalkDir(corpusDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".warc.gz") || strings.HasSuffix(path, ".arc.gz")) {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() <= maxSize {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// TestReset proves that a Reader reset onto another file reads it exactly
// as a new Reader does, gzip after plain and plain after gzip, also when
// the previous file was left half read.
func TestReset(t *testing.T) {
	gz := func(parts ...string) []byte {
		var b bytes.Buffer
		w := NewWriter(&b, 6)
		for _, p := range parts {
			w.Write([]byte(p))
			w.CloseMember()
		}
		return b.Bytes()
	}
	files := [][]byte{gz("one", "two"), []byte("plain file"), gz("three"), gz("four", "five", "six"), []byte("x")}
	readAll := func(z *Reader) []string {
		var got []string
		for {
			m, err := z.Next()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(z)
			got = append(got, fmt.Sprintf("%d:%s", m.Offset, b))
		}
		return got
	}
	var z *Reader
	for i, f := range files {
		fresh, err := NewReader(bytes.NewReader(f), "f")
		if err != nil {
			t.Fatal(err)
		}
		want := readAll(fresh)
		if z == nil {
			z, _ = NewReader(bytes.NewReader(f), "f")
		} else if err := z.Reset(bytes.NewReader(f), "f"); err != nil {
			t.Fatal(err)
		}
		if got := readAll(z); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("file %d after Reset: %v, want %v", i, got, want)
		}
		// Leave the reader half way into the next file before resetting.
		z.Reset(bytes.NewReader(files[(i+1)%len(files)]), "g")
		z.Next()
	}
}

// TestIsGzip proves what IsGzip takes for a gzip file: what a Reader
// decompresses (a member header's magic and deflate method), whatever
// else the file's first bytes are.
func TestIsGzip(t *testing.T) {
	var member bytes.Buffer
	zw := NewWriter(&member, gzip.DefaultCompression)
	zw.Write([]byte("WARC/1.0\r\n"))
	zw.CloseMember()
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"a gzip member", member.Bytes(), true},
		{"a plain WARC", []byte("WARC/1.0\r\nWARC-Type: warcinfo\r\n"), false},
		{"gzip's magic, another method", []byte{0x1f, 0x8b, 0x07, 0}, false},
		{"gzip's magic alone", []byte{0x1f, 0x8b}, false},
		{"an empty file", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IsGzip(bytes.NewReader(tt.data))
			if err != nil || got != tt.want {
				t.Fatalf("IsGzip %v (%v), want %v", got, err, tt.want)
			}
			z, err := NewReader(bytes.NewReader(tt.data), "f")
			if err != nil {
				t.Fatal(err)
			}
			if z.Compressed() != tt.want {
				t.Fatalf("a Reader's Compressed %v, IsGzip %v", z.Compressed(), tt.want)
			}
		})
	}
}
