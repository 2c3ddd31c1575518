// Package gzmember describes a gzip member as it is stored, cheaply, while
// it is read, and rebuilds the member bit for bit from its inflated bytes
// when the zlib settings its writer used can be found.
//
// Deduplication replaces a record (a gzip member of its own in a .warc.gz)
// by a revisit; undo writes the record back. Its inflated bytes are the
// original's, but a member compressed again differs from the one the crawler
// wrote unless it is compressed by the same deflate implementation with the
// same settings. Most writers (Heritrix through Java's Deflater, wget,
// warcio, warcio.js through pako) use zlib or a faithful port of it: a
// Description taken when the record becomes a revisit (its header as stored,
// its length, a BLAKE3 (in descriptions of earlier versions SHA-256) of its
// bytes) lets a Rebuilder try zlib's settings on the inflated bytes and keep
// the result only if it hashes to the original's sum. What cannot be rebuilt is reported so, never guessed:
// the caller then writes a fresh member as before.
package gzmember

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/zeebo/blake3"
)

// Description identifies a gzip member as stored: enough to tell whether
// bytes rebuilt from its inflated content are the member itself, and to put
// back the parts of it a compressor does not make (the header).
type Description struct {
	// Length is the bytes of the whole member: header, deflate data and
	// the 8-byte trailer.
	Length int64
	// Header is the member's gzip header as stored: 10 bytes, then its
	// FEXTRA, FNAME, FCOMMENT and FHCRC fields when its flags say so. At
	// most MaxHeader bytes.
	Header []byte
	// Prefix is the CRC-32 (IEEE) of the member's first min(Length,
	// PrefixLength) bytes. It decides nothing: it lets a rebuild drop a
	// zlib setting as soon as its output passes those bytes, instead of
	// compressing a large member to its end before the hash says no.
	Prefix uint32
	// Sum is the hash of the member's Length bytes, taken with Hash: what
	// a rebuilt member must hash to.
	Sum  [32]byte
	Hash Hash
}

// Hash is the hash function of a Description's Sum: BLAKE3 for those
// taken now (text form gz2), SHA-256 for those of earlier versions (gz1),
// which are still read. BLAKE3 because every member that becomes a revisit
// is described while the rewrite reads it, and SHA-256 cost a tenth of a
// run's CPU on machines without SHA instructions (see
// rewritelog.BenchmarkFileHash: about 1.5 GB/s against 0.2 GB/s).
type Hash uint8

// The hashes of a Description; the zero value is BLAKE3.
const (
	BLAKE3 Hash = iota
	SHA256
)

// New returns a hash of h.
func (h Hash) New() hash.Hash {
	if h == BLAKE3 {
		return blake3.New()
	}
	return sha256.New()
}

// MaxHeader bounds a described header. Writers store 10 bytes, or a few
// more (a file name, a short FEXTRA subfield); a longer header would make
// the description a long log field, so such a member is not described (and
// is compressed afresh at undo, as before).
const MaxHeader = 1024

// PrefixLength is how many of the member's first bytes Prefix covers:
// past the first deflate block of a large member, which is where zlib's
// settings first show.
const PrefixLength = 4096

// The member's trailer: CRC-32 and size of the inflated bytes.
const trailerLength = 8

// minDeflate is the shortest deflate stream (an empty final block with fixed
// codes).
const minDeflate = 2

// The versions that start the text form: gz1 for a SHA-256 sum, gz2 for a
// BLAKE3 one; a later form gets a new one, which this version refuses by
// name.
const (
	textSHA256 = "gz1"
	textBLAKE3 = "gz2"
)

// The FLG bits of a gzip header (RFC 1952 section 2.3.1).
const (
	flagHCRC    = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
)

// b64 encodes the binary fields of the text form: base64url without padding
// (RFC 4648 section 5), refusing non-canonical text.
var b64 = base64.RawURLEncoding.Strict()

// String returns the description's text form, one token of the characters
// [A-Za-z0-9._-]:
//
//	gz2.LENGTH.HEADER.PREFIX.BLAKE3
//	gz1.LENGTH.HEADER.PREFIX.SHA256 (descriptions of earlier versions)
//
// LENGTH in decimal, the others base64url without padding: HEADER the
// header bytes, PREFIX the 4 bytes of Prefix (big-endian), BLAKE3 or SHA256
// the 32 bytes of the hash. A 10-byte header gives 76 characters for a 5-digit
// length.
func (d *Description) String() string { return string(d.AppendText(nil)) }

// AppendText appends the text form to dst.
func (d *Description) AppendText(dst []byte) []byte {
	if d.Hash == SHA256 {
		dst = append(dst, textSHA256...)
	} else {
		dst = append(dst, textBLAKE3...)
	}
	dst = strconv.AppendInt(append(dst, '.'), d.Length, 10)
	dst = b64.AppendEncode(append(dst, '.'), d.Header)
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], d.Prefix)
	dst = b64.AppendEncode(append(dst, '.'), p[:])
	return b64.AppendEncode(append(dst, '.'), d.Sum[:])
}

// MarshalText is AppendText, for encoding.TextMarshaler.
func (d *Description) MarshalText() ([]byte, error) { return d.AppendText(nil), nil }

// UnmarshalText is Parse, for encoding.TextUnmarshaler.
func (d *Description) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// SyntaxError is a text form that does not parse: which part and why.
type SyntaxError struct {
	Text string // the text, cut to 80 bytes
	Part string // "form", "length", "header", "prefix" or "sum"
	Err  error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("gzip member description %q: %s: %v", e.Text, e.Part, e.Err)
}
func (e *SyntaxError) Unwrap() error { return e.Err }

// Parse reads a description's text form (see String). Every field is
// checked: the form's version, a length in decimal without sign or leading
// zero, a header that is one whole gzip header of at most MaxHeader bytes,
// a length that leaves room for deflate data and trailer, and fields of
// exactly their size in canonical base64url. The error is a *SyntaxError.
func Parse(text string) (Description, error) {
	fail := func(part string, err error) (Description, error) {
		shown := text
		if len(shown) > 80 {
			shown = shown[:77] + "..."
		}
		return Description{}, &SyntaxError{Text: shown, Part: part, Err: err}
	}
	parts := strings.Split(text, ".")
	var d Description
	switch {
	case len(parts) > 0 && parts[0] == textBLAKE3:
		d.Hash = BLAKE3
	case len(parts) > 0 && parts[0] == textSHA256:
		d.Hash = SHA256
	default:
		return fail("form", fmt.Errorf("does not start with %q or %q (the forms this build reads)", textBLAKE3+".", textSHA256+"."))
	}
	if len(parts) != 5 {
		return fail("form", fmt.Errorf("%d dot-separated fields, want 5 (%s.LENGTH.HEADER.PREFIX.SUM)", len(parts), parts[0]))
	}
	s := parts[1]
	if s == "" || s[0] < '1' || s[0] > '9' || strings.TrimLeft(s, "0123456789") != "" {
		return fail("length", errors.New("not a positive decimal number without sign or leading zero"))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fail("length", errors.New("out of range"))
	}
	d.Length = n
	if len(parts[2]) > b64.EncodedLen(MaxHeader) {
		return fail("header", fmt.Errorf("longer than %d bytes", MaxHeader))
	}
	if d.Header, err = b64.DecodeString(parts[2]); err != nil {
		return fail("header", fmt.Errorf("not base64url: %v", err))
	}
	if err := checkHeader(d.Header); err != nil {
		return fail("header", err)
	}
	if d.Length < int64(len(d.Header))+minDeflate+trailerLength {
		return fail("length", fmt.Errorf("%d bytes leave no room for deflate data and trailer after a %d-byte header", d.Length, len(d.Header)))
	}
	var p [4]byte
	if err := decodeExact(p[:], parts[3]); err != nil {
		return fail("prefix", err)
	}
	d.Prefix = binary.BigEndian.Uint32(p[:])
	if err := decodeExact(d.Sum[:], parts[4]); err != nil {
		return fail("sum", err)
	}
	return d, nil
}

// decodeExact decodes s into exactly len(dst) bytes.
func decodeExact(dst []byte, s string) error {
	if len(s) != b64.EncodedLen(len(dst)) {
		return fmt.Errorf("%d characters, want %d (%d bytes in base64url)", len(s), b64.EncodedLen(len(dst)), len(dst))
	}
	if _, err := b64.Decode(dst, []byte(s)); err != nil {
		return fmt.Errorf("not base64url: %v", err)
	}
	return nil
}

// errShortHeader is a header that ends before its flags say it does.
var errShortHeader = errors.New("the bytes end inside the gzip header")

// headerLength returns the length of the gzip header at the start of b (RFC
// 1952 section 2.3): errShortHeader if b ends inside it, another error if
// b does not start with a deflate member's header.
func headerLength(b []byte) (int, error) {
	if len(b) < 10 {
		if !bytes.HasPrefix([]byte{0x1f, 0x8b, 8}, b[:min(len(b), 3)]) {
			return 0, errors.New("not a gzip member (no 1f 8b 08 magic)")
		}
		return 0, errShortHeader
	}
	if b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 {
		return 0, errors.New("not a gzip member (no 1f 8b 08 magic)")
	}
	flg := b[3]
	if flg>>5 != 0 {
		return 0, fmt.Errorf("reserved flag bits set (FLG %#02x)", flg)
	}
	n := 10
	if flg&flagExtra != 0 {
		if len(b) < n+2 {
			return 0, errShortHeader
		}
		n += 2 + int(binary.LittleEndian.Uint16(b[n:]))
	}
	for _, f := range []byte{flagName, flagComment} {
		if flg&f == 0 {
			continue
		}
		if n > len(b) {
			return 0, errShortHeader
		}
		i := bytes.IndexByte(b[n:], 0)
		if i < 0 {
			return 0, errShortHeader
		}
		n += i + 1
	}
	if flg&flagHCRC != 0 {
		n += 2
	}
	if n > len(b) {
		return 0, errShortHeader
	}
	return n, nil
}

// checkHeader checks that h is exactly one gzip header.
func checkHeader(h []byte) error {
	n, err := headerLength(h)
	switch {
	case err == errShortHeader:
		return errors.New("ends inside the gzip header its flags describe")
	case err != nil:
		return err
	case n != len(h):
		return fmt.Errorf("%d bytes after the %d-byte gzip header its flags describe", len(h)-n, n)
	}
	return nil
}

// A Describer takes the Description of a member from its bytes as they go
// by, in one pass, while the member is read for something else: its Write
// takes the member's first Length bytes (those of the header kept, all of
// them hashed) and ignores what follows, so it can sit behind a reader that
// reads past the member's end. The zero value is not usable: NewDescriber.
type Describer struct {
	length int64
	seen   int64
	head   []byte // the first min(length, MaxHeader) bytes
	prefix uint32
	sum    hash.Hash
	moved  bool // a Tee'd reader moved: the bytes seen are not the member's in order
}

// NewDescriber returns a Describer of a member of length bytes as stored.
func NewDescriber(length int64) *Describer {
	d := &Describer{sum: BLAKE3.New(), head: make([]byte, 0, MaxHeader)}
	d.Reset(length)
	return d
}

// Reset makes d describe a new member of length bytes, keeping its buffers.
func (d *Describer) Reset(length int64) {
	d.length, d.seen, d.head, d.prefix, d.moved = length, 0, d.head[:0], 0, false
	d.sum.Reset()
}

// Write takes the next bytes of the member; past its length, nothing. It
// never fails.
func (d *Describer) Write(p []byte) (int, error) {
	n := len(p)
	if rest := d.length - d.seen; int64(len(p)) > rest {
		p = p[:max(rest, 0)]
	}
	if len(p) == 0 {
		return n, nil
	}
	if k := min(int64(cap(d.head)), d.length) - int64(len(d.head)); k > 0 {
		d.head = append(d.head, p[:min(int64(len(p)), k)]...)
	}
	if k := min(PrefixLength, d.length) - d.seen; k > 0 {
		d.prefix = crc32.Update(d.prefix, crc32.IEEETable, p[:min(int64(len(p)), k)])
	}
	d.sum.Write(p)
	d.seen += int64(len(p))
	return n, nil
}

// Description returns the description once the member's Length bytes were
// written. It fails if fewer were, if they do not start with a gzip header,
// or if the header is longer than MaxHeader: such a member is not
// described, and is compressed afresh if it is ever rebuilt.
func (d *Describer) Description() (Description, error) {
	switch {
	case d.length <= 0:
		return Description{}, fmt.Errorf("gzip member not described: a length of %d bytes", d.length)
	case d.moved:
		return Description{}, errors.New("gzip member not described: its reader moved while reading it")
	case d.seen < d.length:
		return Description{}, fmt.Errorf("gzip member not described: %d of its %d bytes were read", d.seen, d.length)
	}
	n, err := headerLength(d.head)
	switch {
	case err == errShortHeader && len(d.head) == MaxHeader:
		return Description{}, fmt.Errorf("gzip member not described: its header is longer than %d bytes", MaxHeader)
	case err == errShortHeader:
		return Description{}, fmt.Errorf("gzip member not described: its %d bytes end inside its header", d.length)
	case err != nil:
		return Description{}, fmt.Errorf("gzip member not described: %w", err)
	case d.length < int64(n)+minDeflate+trailerLength:
		return Description{}, fmt.Errorf("gzip member not described: %d bytes leave no room for deflate data and trailer after its %d-byte header", d.length, n)
	}
	desc := Description{Length: d.length, Header: bytes.Clone(d.head[:n]), Prefix: d.prefix, Hash: BLAKE3}
	d.sum.Sum(desc.Sum[:0])
	return desc, nil
}

// Tee returns a reader of r that writes to d every byte it reads, for a
// member read from r's current position. It seeks as r does, so that a
// reader that seeks back over damage keeps doing so; a seek that moves the
// position makes d's Description fail, since d then no longer sees the
// member's bytes in order (a reader only does that over damage, which no
// revisit is made of).
func (d *Describer) Tee(r io.ReadSeeker) io.ReadSeeker { return &tee{r: r, d: d} }

type tee struct {
	r io.ReadSeeker
	d *Describer
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.d.Write(p[:n])
	return n, err
}

func (t *tee) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekCurrent {
		return t.r.Seek(0, io.SeekCurrent) // asks where: moves nothing
	}
	t.d.moved = true
	return t.r.Seek(offset, whence)
}
