package gzmulti

import (
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// ---- building files, with member positions computed by the test itself ----

// part is one member as the test wrote it: where it is and what it holds.
type part struct {
	off, length int64
	payload     []byte
	hdrLen      int // bytes of gzip header (for damaging a chosen section)
}

// builder assembles a file and records every member's offset and length from
// its own byte counts, independently of the package under test.
type builder struct {
	buf   bytes.Buffer
	parts []part
}

func (b *builder) member(m []byte, payload []byte, hdrLen int) *builder {
	b.parts = append(b.parts, part{off: int64(b.buf.Len()), length: int64(len(m)), payload: payload, hdrLen: hdrLen})
	b.buf.Write(m)
	return b
}

func (b *builder) raw(p []byte) *builder { b.buf.Write(p); return b }

func (b *builder) bytes() []byte { return bytes.Clone(b.buf.Bytes()) }

// klauspostMember compresses payload as one member with klauspost/compress/gzip.
func klauspostMember(t testing.TB, payload []byte, hdr gzip.Header, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Header = hdr
	if _, err := zw.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stdMember compresses payload as one member with the standard library.
func stdMember(t testing.TB, payload []byte, hdr stdgzip.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := stdgzip.NewWriter(&buf)
	zw.Header = hdr
	if _, err := zw.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hdrOpts are the optional RFC 1952 header fields of a hand-made member.
type hdrOpts struct {
	text    bool
	extra   []byte
	name    string
	comment string
	hcrc    bool
	level   int  // deflate level; 0 means DefaultCompression
	stored  bool // deflate with stored blocks only
}

// handMember builds a member byte by byte: header with the fields asked for
// (including FHCRC, which no Go writer produces), raw deflate data, trailer.
// It returns the member and the length of its header.
func handMember(t testing.TB, payload []byte, o hdrOpts) ([]byte, int) {
	t.Helper()
	var flg byte
	if o.text {
		flg |= 1
	}
	if o.hcrc {
		flg |= 2
	}
	if o.extra != nil {
		flg |= 4
	}
	if o.name != "" {
		flg |= 8
	}
	if o.comment != "" {
		flg |= 16
	}
	h := []byte{0x1f, 0x8b, 8, flg, 0x12, 0x34, 0x56, 0x78, 0, 3}
	if o.extra != nil {
		h = binary.LittleEndian.AppendUint16(h, uint16(len(o.extra)))
		h = append(h, o.extra...)
	}
	if o.name != "" {
		h = append(append(h, o.name...), 0)
	}
	if o.comment != "" {
		h = append(append(h, o.comment...), 0)
	}
	if o.hcrc {
		h = binary.LittleEndian.AppendUint16(h, uint16(crc32.ChecksumIEEE(h)))
	}
	hdrLen := len(h)
	level := stdflate.DefaultCompression
	if o.level != 0 {
		level = o.level
	}
	if o.stored {
		level = stdflate.NoCompression
	}
	var d bytes.Buffer
	fw, err := stdflate.NewWriter(&d, level)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(payload)
	fw.Close()
	m := append(h, d.Bytes()...)
	m = binary.LittleEndian.AppendUint32(m, crc32.ChecksumIEEE(payload))
	m = binary.LittleEndian.AppendUint32(m, uint32(len(payload)))
	return m, hdrLen
}

// minimalEmptyMember is the smallest valid member: a 10-byte header, a final
// fixed-Huffman block holding only end-of-block, CRC 0 and size 0.
var minimalEmptyMember = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x03, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}

// storedEmptyMember holds an empty final stored block.
var storedEmptyMember = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}

// textPayload is deterministic text-like data (compresses like HTML/HTTP).
func textPayload(seed uint64, n int) []byte {
	words := strings.Fields(`the of and to in is that for it as was with be by on not he this are or his from at which but
		have an they you were her she there been one all we their has would when if so no will more can out up what about
		<html> <head> <title> </title> <div class="content"> </div> <a href="https://example.org/page"> </a> <p> </p>
		HTTP/1.1 200 OK Content-Type: text/html; charset=utf-8 Server: nginx Date: WARC-Record-ID: urn:uuid:`)
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString("\r\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// randomPayload is deterministic incompressible data.
func randomPayload(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	c := rand.NewChaCha8(key)
	p := make([]byte, n)
	c.Read(p)
	return p
}

// ---- reading a file with the Reader, under a deadline ----

// step is what one Next (and the Reads of its member) produced.
type step struct {
	m       Member // Next's member when nextErr is nil
	nextErr error
	data    []byte // bytes Read returned
	readErr error  // Read's error other than io.EOF
	final   Member // Member() once Read ended
}

func (s step) String() string {
	if s.nextErr != nil {
		return fmt.Sprintf("Next error %v", s.nextErr)
	}
	if s.readErr != nil {
		return fmt.Sprintf("member %+v, %d bytes, Read error %v", s.m, len(s.data), s.readErr)
	}
	return fmt.Sprintf("member %+v, %d bytes, then %+v", s.m, len(s.data), s.final)
}

// deadline bounds every read of a file in these tests: an infinite loop in
// the Reader fails the test instead of hanging it.
func deadline(t testing.TB) time.Duration {
	limit := 60 * time.Second
	if tt, ok := t.(*testing.T); ok {
		if d, ok := tt.Deadline(); ok {
			if left := time.Until(d) / 2; left < limit {
				limit = left
			}
		}
	}
	return limit
}

// bounded runs f on another goroutine and fails the test if it does not
// return within the deadline. f must not call t.Fatal.
func bounded(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	limit := deadline(t)
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not finish within %v: the Reader loops", what, limit)
	}
}

// readFile iterates every member of data until Next returns io.EOF, reading
// each member through a buffer of bufSize bytes. It fails the test if Next
// never reaches io.EOF (more calls than the file has bytes) or a Read makes
// no progress.
func readFile(t testing.TB, data []byte, name string, bufSize int) (z *Reader, steps []step) {
	t.Helper()
	z, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var fail string
	bounded(t, "reading "+name, func() {
		buf := make([]byte, bufSize)
		for calls := 0; ; calls++ {
			if calls > len(data)+2 {
				fail = fmt.Sprintf("Next called %d times on %d bytes without io.EOF: %v", calls, len(data), steps[len(steps)-5:])
				return
			}
			m, err := z.Next()
			if err == io.EOF {
				return
			}
			s := step{m: m, nextErr: err}
			if err == nil {
				zero := 0
				for {
					n, err := z.Read(buf)
					s.data = append(s.data, buf[:n]...)
					if n == 0 && err == nil {
						if zero++; zero > 1000 {
							fail = "Read returns 0, nil forever"
							return
						}
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						s.readErr = err
						break
					}
				}
				s.final = z.Member()
			}
			steps = append(steps, s)
		}
	})
	if fail != "" {
		t.Fatal(fail)
	}
	return z, steps
}

// want is one expected step.
type want struct {
	off     int64
	length  int64  // member length once read (members read without damage)
	payload []byte // exact bytes; for a damaged member, what Read returns must be a prefix
	nextErr error  // sentinel Next must return (wrapped in *Error at off)
	readErr error  // sentinel Read must return (wrapped in *Error at off)
	msg     string // substring of the error message
}

func ok(p part) want { return want{off: p.off, length: p.length, payload: p.payload} }

func wantsOf(parts []part) []want {
	var w []want
	for _, p := range parts {
		w = append(w, ok(p))
	}
	return w
}

// checkError asserts that err is an *Error at off wrapping sentinel.
func checkError(t testing.TB, what string, err error, off int64, sentinel error, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: error %v (%T) is not a *gzmulti.Error", what, err, err)
		return
	}
	if e.Offset != off {
		t.Errorf("%s: error offset %d, want %d (%v)", what, e.Offset, off, err)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: error %v does not wrap %v", what, err, sentinel)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: error %q does not say %q", what, err, msg)
	}
}

func checkSteps(t testing.TB, got []step, wants []want) {
	t.Helper()
	for i := 0; i < len(got) || i < len(wants); i++ {
		if i >= len(wants) {
			t.Errorf("step %d: unexpected %v", i, got[i])
			continue
		}
		w := wants[i]
		if i >= len(got) {
			t.Errorf("step %d: missing; want offset %d (next error %v, read error %v)", i, w.off, w.nextErr, w.readErr)
			continue
		}
		s := got[i]
		what := fmt.Sprintf("step %d", i)
		if w.nextErr != nil {
			if s.nextErr == nil {
				t.Errorf("%s: got %v, want Next error %v at %d", what, s, w.nextErr, w.off)
				continue
			}
			checkError(t, what+": Next", s.nextErr, w.off, w.nextErr, w.msg)
			continue
		}
		if s.nextErr != nil {
			t.Errorf("%s: Next error %v, want member at %d", what, s.nextErr, w.off)
			continue
		}
		if s.m.Offset != w.off || s.m.Length != -1 {
			t.Errorf("%s: Next returned %+v, want {Offset:%d Length:-1}", what, s.m, w.off)
		}
		if w.readErr != nil {
			if s.readErr == nil {
				t.Errorf("%s: Read ended without error, want %v", what, w.readErr)
				continue
			}
			checkError(t, what+": Read", s.readErr, w.off, w.readErr, w.msg)
			if w.payload != nil && !bytes.HasPrefix(w.payload, s.data) {
				t.Errorf("%s: damaged member returned %d bytes that are not a prefix of its payload", what, len(s.data))
			}
			continue
		}
		if s.readErr != nil {
			t.Errorf("%s: Read error %v, want the member's bytes", what, s.readErr)
			continue
		}
		if !bytes.Equal(s.data, w.payload) {
			t.Errorf("%s: Read returned %d bytes, want the %d bytes of the member", what, len(s.data), len(w.payload))
		}
		if s.final != (Member{Offset: w.off, Length: w.length}) {
			t.Errorf("%s: Member() after io.EOF is %+v, want {Offset:%d Length:%d}", what, s.final, w.off, w.length)
		}
	}
}
