//go:build cgo && !nozlib

package gzmember

import (
	"bytes"
	stdgzip "compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// payloads are the inflated contents the tests compress: a WARC record of
// a web page, larger text (several deflate blocks), incompressible bytes,
// one byte, and nothing.
var payloads = []struct {
	name string
	p    []byte
}{
	{"record 20 KB", warcRecord(textPayload(1, 20<<10))},
	{"text 150 KB", textPayload(2, 150<<10)},
	{"random 70 KB", randomPayload(3, 70<<10)},
	{"one byte", []byte("x")},
	{"empty", nil},
}

// rebuildOK rebuilds member m from payload with r and checks that the
// bytes written are m itself.
func rebuildOK(t *testing.T, r *Rebuilder, m, payload []byte) Setting {
	t.Helper()
	d := describe(t, m)
	var out bytes.Buffer
	s, err := r.Rebuild(&d, (&opener{p: payload}).open, &out)
	if err != nil {
		t.Fatalf("%v (tried %d settings)", err, r.Tried())
	}
	if !bytes.Equal(out.Bytes(), m) {
		t.Fatalf("rebuilt with %v: %d bytes that are not the member's %d", s, out.Len(), len(m))
	}
	return s
}

// notRebuildable checks that member m, described, is reported not
// rebuildable from payload after every setting was tried, with nothing
// written.
func notRebuildable(t *testing.T, m, payload []byte) {
	t.Helper()
	d := describe(t, m)
	notRebuildableFrom(t, &d, payload)
}

func notRebuildableFrom(t *testing.T, d *Description, payload []byte) {
	t.Helper()
	r := NewRebuilder()
	defer r.Close()
	var out bytes.Buffer
	s, err := r.Rebuild(d, (&opener{p: payload}).open, &out)
	if !errors.Is(err, ErrNotRebuildable) {
		t.Fatalf("rebuilt with %v (err %v): want ErrNotRebuildable", s, err)
	}
	if out.Len() != 0 {
		t.Fatalf("%d bytes written for a member that cannot be rebuilt", out.Len())
	}
	if r.Tried() != int64(len(DefaultOrder)) {
		t.Fatalf("tried %d settings, want all %d", r.Tried(), len(DefaultOrder))
	}
}

// TestRebuildZlibMembers: members zlib makes with any setting of the
// default order, with every header form, fed to zlib in one piece or in odd
// chunks, are rebuilt bit for bit by a Rebuilder that tries that setting.
func TestRebuildZlibMembers(t *testing.T) {
	for k, s := range DefaultOrder {
		for i, h := range headers {
			// Every payload with the first header; one payload with each
			// of the others (the header is kept, not made).
			for j, p := range payloads {
				if i > 0 && j != (i+k)%len(payloads) {
					continue
				}
				chunk := []int{0, 1, 4093, 65536}[(i+j+k)%4]
				if chunk == 1 && len(p.p) > 30<<10 {
					chunk = 7
				}
				t.Run(fmt.Sprintf("%v/%s/%s/chunk %d", s, h.name, p.name, chunk), func(t *testing.T) {
					m := zlibMember(t, h.h.bytes(), p.p, s, chunk, flushAtEnd(s, p.p), flushSync)
					if !bytes.Equal(readMember(t, m), p.p) {
						t.Fatal("the test's member does not inflate to its payload")
					}
					r := &Rebuilder{Order: []Setting{s}}
					defer r.Close()
					rebuildOK(t, r, m, p.p)
				})
			}
		}
	}
}

// flushAtEnd is zlibMember's flushEvery for a member of setting s: the
// payload's length if the writer flushed before finishing.
func flushAtEnd(s Setting, p []byte) int {
	if s.FlushBeforeFinish {
		return max(len(p), 1)
	}
	return 0
}

// TestDefaultOrderFinds: from a fresh Rebuilder, the default order finds
// a setting that makes the member, whichever of its settings made it.
func TestDefaultOrderFinds(t *testing.T) {
	p := warcRecord(textPayload(12, 30<<10))
	for _, s := range DefaultOrder {
		t.Run(s.String(), func(t *testing.T) {
			m := zlibMember(t, headers[1].h.bytes(), p, s, 0, flushAtEnd(s, p), flushSync)
			r := NewRebuilder()
			defer r.Close()
			got := rebuildOK(t, r, m, p)
			if got != s && !bytes.Equal(zlibMember(t, headers[1].h.bytes(), p, got, 0, flushAtEnd(got, p), flushSync), m) {
				t.Fatalf("found %v, which does not make the member", got)
			}
		})
	}
}

// TestRebuildPythonGzip: members written by Python's gzip module (another
// program, through the system's zlib: its own header with a time and a
// name), flushed before close or not, are rebuilt bit for bit.
func TestRebuildPythonGzip(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	payload := warcRecord(textPayload(9, 50<<10))
	for _, tc := range []struct {
		level int
		flush bool
	}{{1, false}, {6, false}, {9, false}, {9, true}} {
		t.Run(fmt.Sprintf("level %d flush %v", tc.level, tc.flush), func(t *testing.T) {
			flush := ""
			if tc.flush {
				flush = "f.flush()"
			}
			cmd := exec.Command(py, "-c", fmt.Sprintf(`import gzip, io, sys
data = sys.stdin.buffer.read()
buf = io.BytesIO()
with gzip.GzipFile(filename="rec.warc", mode="wb", compresslevel=%d, fileobj=buf, mtime=1714557600) as f:
    for i in range(0, len(data), 1000):
        f.write(data[i:i+1000])
    %s
sys.stdout.buffer.write(buf.getvalue())`, tc.level, flush))
			cmd.Stdin = bytes.NewReader(payload)
			m, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readMember(t, m), payload) {
				t.Fatal("python's member does not inflate to the payload")
			}
			r := NewRebuilder()
			defer r.Close()
			rebuildOK(t, r, m, payload)
		})
	}
}

// TestNotRebuildable: members no default zlib setting makes are reported
// so after every setting was tried, with nothing written; the SHA-256
// decides. A header is kept as it is: a zlib member whose header another
// tool changed is still rebuilt.
func TestNotRebuildable(t *testing.T) {
	payload := warcRecord(textPayload(4, 40<<10))
	big := textPayload(5, 200<<10)
	hdr := headers[0].h.bytes()
	z6 := Setting{Level: 6, MemLevel: 8, WindowBits: 15}
	cases := []struct {
		name    string
		member  func(t *testing.T) []byte
		payload []byte
	}{
		{"Go compress/gzip default", func(t *testing.T) []byte { return stdMember(t, payload, stdgzip.DefaultCompression) }, payload},
		{"Go compress/gzip best", func(t *testing.T) []byte { return stdMember(t, payload, stdgzip.BestCompression) }, payload},
		{"Go compress/gzip speed", func(t *testing.T) []byte { return stdMember(t, payload, stdgzip.BestSpeed) }, payload},
		{"Go compress/gzip huffman only", func(t *testing.T) []byte { return stdMember(t, payload, stdgzip.HuffmanOnly) }, payload},
		{"klauspost gzip default", func(t *testing.T) []byte { return kMember(t, payload, kgzip.DefaultCompression) }, payload},
		{"klauspost gzip best", func(t *testing.T) []byte { return kMember(t, payload, kgzip.BestCompression) }, payload},
		{"klauspost gzip large", func(t *testing.T) []byte { return kMember(t, big, kgzip.DefaultCompression) }, big},
		// pigz cuts its input in 128 KiB blocks, each ended by a flush.
		{"pigz-like sync flush every 128 KiB", func(t *testing.T) []byte { return zlibMember(t, hdr, big, z6, 0, 128<<10, flushSync) }, big},
		{"full flush every 128 KiB", func(t *testing.T) []byte { return zlibMember(t, hdr, big, z6, 0, 128<<10, flushFull) }, big},
		{"zlib windowBits 12", func(t *testing.T) []byte {
			return zlibMember(t, hdr, big, Setting{Level: 6, MemLevel: 8, WindowBits: 12}, 0, 0, 0)
		}, big},
		{"zlib memLevel 7", func(t *testing.T) []byte {
			return zlibMember(t, hdr, big, Setting{Level: 6, MemLevel: 7, WindowBits: 15}, 0, 0, 0)
		}, big},
		{"zlib Z_FILTERED", func(t *testing.T) []byte {
			return zlibMember(t, hdr, big, Setting{Level: 6, MemLevel: 8, WindowBits: 15, Strategy: 1}, 0, 0, 0)
		}, big},
		{"zlib level 0 (stored)", func(t *testing.T) []byte {
			return zlibMember(t, hdr, payload, Setting{Level: 0, MemLevel: 8, WindowBits: 15}, 0, 0, 0)
		}, payload},
		{"zlib member, one deflate byte altered after", func(t *testing.T) []byte {
			m := zlibMember(t, hdr, payload, z6, 0, 0, 0)
			m[len(hdr)+100] ^= 0x10
			return m
		}, payload},
		{"zlib member, trailer CRC altered", func(t *testing.T) []byte {
			m := zlibMember(t, hdr, payload, z6, 0, 0, 0)
			m[len(m)-6] ^= 1
			return m
		}, payload},
		{"zlib member, a byte appended", func(t *testing.T) []byte {
			return append(zlibMember(t, hdr, payload, z6, 0, 0, 0), 0)
		}, payload},
		{"zlib member, its inflated bytes differ by one", func(t *testing.T) []byte {
			return zlibMember(t, hdr, payload, z6, 0, 0, 0)
		}, flipped(payload, 5000)},
		{"zlib member, its inflated bytes one shorter", func(t *testing.T) []byte {
			return zlibMember(t, hdr, payload, z6, 0, 0, 0)
		}, payload[:len(payload)-1]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			notRebuildable(t, tc.member(t), tc.payload)
		})
	}
	t.Run("a zlib member whose header was changed after: kept, so rebuilt", func(t *testing.T) {
		m := zlibMember(t, hdr, payload, z6, 0, 0, 0)
		m = append(header{mtime: 99, os: 7, name: "renamed"}.bytes(), m[len(hdr):]...)
		r := NewRebuilder()
		defer r.Close()
		rebuildOK(t, r, m, payload)
	})
	t.Run("a setting outside the default order, when asked for", func(t *testing.T) {
		s := Setting{Level: 6, MemLevel: 8, WindowBits: 12}
		m := zlibMember(t, hdr, big, s, 0, 0, 0)
		r := &Rebuilder{Order: append(DefaultOrder[:len(DefaultOrder):len(DefaultOrder)], s)}
		defer r.Close()
		if got := rebuildOK(t, r, m, big); got != s {
			t.Fatalf("found %v", got)
		}
	})
}

func flipped(p []byte, i int) []byte {
	q := bytes.Clone(p)
	q[i] ^= 1
	return q
}

func stdMember(t *testing.T, payload []byte, level int) []byte {
	var b bytes.Buffer
	zw, err := stdgzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(payload)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func kMember(t *testing.T, payload []byte, level int) []byte {
	var b bytes.Buffer
	zw, err := kgzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(payload)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRebuildLargeTwoPasses: a member larger than MaxBuffer is compressed
// once to be checked and once more as it is written; the bytes are the
// member's, and the inflated bytes are read once per pass.
func TestRebuildLargeTwoPasses(t *testing.T) {
	payload := textPayload(6, 500<<10)
	s := Setting{Level: 9, MemLevel: 8, WindowBits: 15}
	m := zlibMember(t, headers[1].h.bytes(), payload, s, 0, 0, 0)
	d := describe(t, m)
	for _, maxBuf := range []int64{int64(len(m)), int64(len(m)) - 1} {
		t.Run(fmt.Sprintf("MaxBuffer %d", maxBuf), func(t *testing.T) {
			r := &Rebuilder{MaxBuffer: maxBuf}
			defer r.Close()
			o := &opener{p: payload}
			var out bytes.Buffer
			got, err := r.Rebuild(&d, o.open, &out)
			if err != nil || got != s || !bytes.Equal(out.Bytes(), m) {
				t.Fatalf("%v %v: %d bytes, member equal: %v", got, err, out.Len(), bytes.Equal(out.Bytes(), m))
			}
			passes := 1
			if maxBuf < int64(len(m)) {
				passes = 2
			}
			// Level 6 first (dropped early by its prefix), then level 9.
			if o.calls != 1+passes {
				t.Fatalf("the inflated bytes were opened %d times, want %d", o.calls, 1+passes)
			}
		})
	}
}

// changing gives p on the first call, and p altered on the next ones.
type changing struct {
	p     []byte
	calls int
}

func (c *changing) open() (io.Reader, error) {
	c.calls++
	if c.calls == 1 {
		return bytes.NewReader(c.p), nil
	}
	return bytes.NewReader(flipped(c.p, len(c.p)-10)), nil
}

// failingReader returns err after n bytes.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

type failingWriter struct{ err error }

func (f failingWriter) Write(p []byte) (int, error) { return 0, f.err }

// TestRebuildErrors: what goes wrong around a rebuild is told apart from a
// member that cannot be rebuilt.
func TestRebuildErrors(t *testing.T) {
	payload := textPayload(7, 300<<10)
	s := Setting{Level: 6, MemLevel: 8, WindowBits: 15}
	m := zlibMember(t, headers[0].h.bytes(), payload, s, 0, 0, 0)
	d := describe(t, m)
	errRead, errWrite := errors.New("disk gone"), errors.New("disk full")

	t.Run("inflated bytes change between the two passes", func(t *testing.T) {
		r := &Rebuilder{MaxBuffer: 1000}
		defer r.Close()
		_, err := r.Rebuild(&d, (&changing{p: payload}).open, io.Discard)
		if !errors.Is(err, ErrChanged) || errors.Is(err, ErrNotRebuildable) {
			t.Fatalf("%v, want ErrChanged", err)
		}
	})
	t.Run("open fails", func(t *testing.T) {
		r := NewRebuilder()
		defer r.Close()
		var out bytes.Buffer
		_, err := r.Rebuild(&d, func() (io.Reader, error) { return nil, errRead }, &out)
		if !errors.Is(err, errRead) || errors.Is(err, ErrNotRebuildable) || out.Len() != 0 {
			t.Fatalf("%v, %d bytes written", err, out.Len())
		}
	})
	t.Run("reading fails", func(t *testing.T) {
		r := NewRebuilder()
		defer r.Close()
		var out bytes.Buffer
		_, err := r.Rebuild(&d, func() (io.Reader, error) { return &failingReader{n: 100 << 10, err: errRead}, nil }, &out)
		if !errors.Is(err, errRead) || errors.Is(err, ErrNotRebuildable) || out.Len() != 0 {
			t.Fatalf("%v, %d bytes written", err, out.Len())
		}
	})
	for _, maxBuf := range []int64{0, 1000} {
		t.Run(fmt.Sprintf("writing fails, MaxBuffer %d", maxBuf), func(t *testing.T) {
			r := &Rebuilder{MaxBuffer: maxBuf}
			defer r.Close()
			_, err := r.Rebuild(&d, (&opener{p: payload}).open, failingWriter{errWrite})
			var we *WriteError
			if !errors.As(err, &we) || !errors.Is(err, errWrite) {
				t.Fatalf("%v, want a *WriteError", err)
			}
		})
	}
	t.Run("a description no member can match", func(t *testing.T) {
		r := NewRebuilder()
		defer r.Close()
		bad := d
		bad.Header = []byte{0x1f, 0x8b, 8, flagName, 0, 0, 0, 0, 0, 3} // a name without its NUL
		_, err := r.Rebuild(&bad, (&opener{p: payload}).open, io.Discard)
		if err == nil || errors.Is(err, ErrNotRebuildable) || r.Tried() != 0 {
			t.Fatalf("%v after %d settings, want an error before any", err, r.Tried())
		}
	})
}

// TestRebuildLearnsTheWriter: once a setting matched, the next member of
// the same writer is rebuilt at the first try; a member of another writer
// after it is still found.
func TestRebuildLearnsTheWriter(t *testing.T) {
	r := NewRebuilder()
	defer r.Close()
	s9 := Setting{Level: 9, MemLevel: 8, WindowBits: 15}
	hdr := headers[0].h.bytes()
	var tried []int64
	for i, s := range []Setting{s9, s9, s9, {Level: 6, MemLevel: 8, WindowBits: 15}} {
		p := textPayload(uint64(10+i), 60<<10)
		before := r.Tried()
		if got := rebuildOK(t, r, zlibMember(t, hdr, p, s, 0, 0, 0), p); got != s {
			t.Fatalf("member %d: found %v, made with %v", i, got, s)
		}
		tried = append(tried, r.Tried()-before)
	}
	if tried[0] != 2 || tried[1] != 1 || tried[2] != 1 || tried[3] != 2 {
		t.Fatalf("settings tried per member: %v, want [2 1 1 2]", tried)
	}
}

// TestRebuildPrefixDropsEarly: a large member no setting makes is given
// up on by every setting early, not after compressing it whole: a reader
// of the inflated bytes is read only to a small part of them per setting.
func TestRebuildPrefixDropsEarly(t *testing.T) {
	big := textPayload(8, 4<<20)
	m := kMember(t, big, kgzip.DefaultCompression)
	d := describe(t, m)
	var read int64
	open := func() (io.Reader, error) { return &countingReader{r: bytes.NewReader(big), n: &read}, nil }
	r := NewRebuilder()
	defer r.Close()
	if _, err := r.Rebuild(&d, open, io.Discard); !errors.Is(err, ErrNotRebuildable) {
		t.Fatal(err)
	}
	perSetting := read / int64(len(DefaultOrder))
	if perSetting > 1<<20 {
		t.Fatalf("%d inflated bytes read per setting of %d: the prefix did not stop them", perSetting, len(big))
	}
	t.Logf("%d of %d inflated bytes read per setting", perSetting, len(big))
}

type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// TestZlibVersion: the build names its zlib.
func TestZlibVersion(t *testing.T) {
	if !Available() || ZlibVersion() == "" {
		t.Fatalf("Available %v, version %q", Available(), ZlibVersion())
	}
	t.Logf("zlib %s", ZlibVersion())
}

// TestRebuildNarrows: after Patience members in a row that no setting
// makes, a Rebuilder tries only its likeliest setting, so a file of
// another writer costs one compression per member; a member of that
// setting is still rebuilt (and widens the search again), and Reset, for
// the next file, tries every setting again.
func TestRebuildNarrows(t *testing.T) {
	hdr := headers[0].h.bytes()
	r := &Rebuilder{Patience: 3}
	defer r.Close()
	goMember := func(i int) ([]byte, []byte) {
		p := textPayload(uint64(100+i), 10<<10)
		return kMember(t, p, kgzip.DefaultCompression), p
	}
	tries := func(m, p []byte) (int64, error) {
		d := describe(t, m)
		before := r.Tried()
		var out bytes.Buffer
		_, err := r.Rebuild(&d, (&opener{p: p}).open, &out)
		if err == nil && !bytes.Equal(out.Bytes(), m) {
			t.Fatal("rebuilt wrong")
		}
		return r.Tried() - before, err
	}
	all := int64(len(DefaultOrder))
	for i := range 3 {
		if n, err := tries(goMember(i)); n != all || !errors.Is(err, ErrNotRebuildable) || r.Narrowed() != (i == 2) {
			t.Fatalf("Go member %d: %d tried, %v, narrowed %v", i, n, err, r.Narrowed())
		}
	}
	if n, err := tries(goMember(3)); n != 1 || !errors.Is(err, ErrNotRebuildable) {
		t.Fatalf("narrowed: %d tried, %v", n, err)
	}
	p := textPayload(200, 10<<10)
	z9 := zlibMember(t, hdr, p, Setting{Level: 9, MemLevel: 8, WindowBits: 15}, 0, 0, 0)
	if n, err := tries(z9, p); n != 1 || !errors.Is(err, ErrNotRebuildable) {
		t.Fatalf("narrowed, a level 9 member: %d tried, %v", n, err)
	}
	z6 := zlibMember(t, hdr, p, Setting{Level: 6, MemLevel: 8, WindowBits: 15}, 0, 0, 0)
	if n, err := tries(z6, p); n != 1 || err != nil || r.Narrowed() {
		t.Fatalf("narrowed, a member of the likeliest setting: %d tried, %v, narrowed %v", n, err, r.Narrowed())
	}
	for i := range 3 {
		tries(goMember(10 + i))
	}
	r.Reset()
	if n, err := tries(z9, p); n != 2 || err != nil {
		t.Fatalf("after Reset, a level 9 member: %d tried, %v", n, err)
	}
}

// TestRebuildEarlierForm: a description an earlier version wrote (gz1, a
// SHA-256 sum) still parses and rebuilds its member bit for bit, and one
// whose sum is not the member's rebuilds nothing; a description taken now
// is gz2 (BLAKE3).
func TestRebuildEarlierForm(t *testing.T) {
	p := payloads[0].p
	m := zlibMember(t, headers[0].h.bytes(), p, DefaultOrder[0], 0, 0, flushSync)
	now := describe(t, m)
	if s := now.String(); !strings.HasPrefix(s, "gz2.") || now.Hash != BLAKE3 {
		t.Fatalf("a description taken now is %s", s)
	}
	sum := sha256.Sum256(m)
	text := "gz1" + strings.TrimPrefix(now.String(), "gz2")
	text = text[:strings.LastIndexByte(text, '.')+1] + base64.RawURLEncoding.EncodeToString(sum[:])
	for _, c := range []struct {
		name string
		text string
		ok   bool
	}{
		{"its SHA-256", text, true},
		{"another SHA-256", text[:len(text)-2] + map[bool]string{true: "AA", false: "AQ"}[!strings.HasSuffix(text, "AA")], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Parse(c.text)
			if err != nil {
				t.Fatalf("%s: %v", c.text, err)
			}
			if d.Hash != SHA256 || d.String() != c.text {
				t.Fatalf("%s parses to hash %v, text %s", c.text, d.Hash, d.String())
			}
			if !c.ok {
				notRebuildableFrom(t, &d, p)
				return
			}
			r := NewRebuilder()
			defer r.Close()
			var out bytes.Buffer
			if _, err := r.Rebuild(&d, (&opener{p: p}).open, &out); err != nil || !bytes.Equal(out.Bytes(), m) {
				t.Fatalf("rebuilt %d bytes (%v), want the member's %d", out.Len(), err, len(m))
			}
		})
	}
}
