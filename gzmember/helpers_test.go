package gzmember

import (
	"bytes"
	"compress/flate"
	stdgzip "compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// textPayload is deterministic text of n bytes, HTML and HTTP-like, that
// compresses about as web pages do.
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
	p := make([]byte, n)
	rand.NewChaCha8(key).Read(p)
	return p
}

// warcRecord is a WARC response record around payload, as a member holds it.
func warcRecord(payload []byte) []byte {
	var b bytes.Buffer
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
	b.WriteString("WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: https://example.org/\r\n")
	b.WriteString("WARC-Date: 2024-05-01T10:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(head)+len(payload)) + "\r\n\r\n")
	b.WriteString(head)
	b.Write(payload)
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// header builds a gzip header by RFC 1952 from its parts, independently of
// the package: mtime, XFL and OS, and the optional fields when not nil.
type header struct {
	mtime   uint32
	xfl, os byte
	extra   []byte // the subfields, without XLEN
	name    string
	comment string
	hcrc    bool
	hasName bool // name given (possibly empty)
}

func (h header) bytes() []byte {
	var flg byte
	if h.extra != nil {
		flg |= flagExtra
	}
	if h.hasName || h.name != "" {
		flg |= flagName
	}
	if h.comment != "" {
		flg |= flagComment
	}
	if h.hcrc {
		flg |= flagHCRC
	}
	b := []byte{0x1f, 0x8b, 8, flg, 0, 0, 0, 0, h.xfl, h.os}
	binary.LittleEndian.PutUint32(b[4:], h.mtime)
	if h.extra != nil {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h.extra)))
		b = append(b, h.extra...)
	}
	if flg&flagName != 0 {
		b = append(append(b, h.name...), 0)
	}
	if h.comment != "" {
		b = append(append(b, h.comment...), 0)
	}
	if h.hcrc {
		b = binary.LittleEndian.AppendUint16(b, uint16(crc32.ChecksumIEEE(b)))
	}
	return b
}

// The header forms the tests use: what zlib's gzip wrapper writes (Unix,
// no time), what Python's gzip module writes (a time, a name, OS 255), a
// FEXTRA subfield as jwarc's "sl" (the record's length), a comment, and
// every optional field at once with a header CRC.
var headers = []struct {
	name string
	h    header
}{
	{"zlib gzip wrapper", header{os: 3}},
	{"level 9 XFL, mtime", header{mtime: 1714557600, xfl: 2, os: 3}},
	{"name", header{mtime: 1714557600, os: 255, name: "IAH-20080430204825-00000-blackbook.warc"}},
	{"empty name", header{os: 0, hasName: true}},
	{"extra sl", header{os: 3, extra: []byte{'s', 'l', 8, 0, 1, 2, 3, 4, 5, 6, 7, 8}}},
	{"comment", header{os: 3, comment: "made by a test"}},
	{"all fields and header CRC", header{mtime: 7, xfl: 4, os: 11, extra: []byte{'L', 'X', 2, 0, 9, 9}, name: "f.warc", comment: "c", hcrc: true}},
}

// readMember inflates a whole gzip member with Go's compress/gzip, as a
// check that a test built a real one.
func readMember(t testing.TB, m []byte) []byte {
	t.Helper()
	zr, err := stdgzip.NewReader(bytes.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// describe describes a member from its bytes, as the rewrite would.
func describe(t testing.TB, m []byte) Description {
	t.Helper()
	d := NewDescriber(int64(len(m)))
	d.Write(m)
	desc, err := d.Description()
	if err != nil {
		t.Fatal(err)
	}
	return desc
}

// opener gives p from its start at each call, and counts the calls.
type opener struct {
	p     []byte
	calls int
}

func (o *opener) open() (io.Reader, error) {
	o.calls++
	return bytes.NewReader(o.p), nil
}

// newFlateWriter is a raw deflate writer of Go's, for members whose
// description is what matters, not who compressed them.
func newFlateWriter(t testing.TB, w io.Writer) *flate.Writer {
	t.Helper()
	fw, err := flate.NewWriter(w, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	return fw
}

// crc32le is the trailer of payload.
func crc32le(payload []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(payload))
	return binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
}
