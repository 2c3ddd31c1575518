package gen

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
)

// Kind says how a Payload's bytes are made.
type Kind uint8

// The payload kinds.
const (
	KindEmpty     Kind = iota // no bytes at all
	KindHTML                  // an HTML page: head with a unique title, words, closing tags
	KindText                  // a style sheet or script: a unique comment, then words
	KindBinary                // an image: a magic number, then incompressible random bytes
	KindCollision             // Prefix (one member of a collision pair), then words common to both members
)

func (k Kind) String() string {
	switch k {
	case KindEmpty:
		return "empty"
	case KindHTML:
		return "html"
	case KindText:
		return "text"
	case KindBinary:
		return "binary"
	case KindCollision:
		return "collision"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Payload is the small descriptor a payload's bytes are regenerated from:
// two equal descriptors always give the same bytes, so a duplicate is
// written by writing the same descriptor again, and no payload is ever kept
// in memory whole. The bytes are the HTTP entity body as stored in the
// record (with the chunked framing when Chunked), which is what the manifest
// digest is computed over.
type Payload struct {
	Kind    Kind
	Seed    uint64 // seeds the generator of the content bytes
	Size    int64  // content bytes, before any chunked framing
	Chunked bool   // stored with Transfer-Encoding: chunked framing
	Prefix  string // KindCollision: the pair member the content starts with
}

// ContentType is the HTTP Content-Type the payload is served with.
func (p Payload) ContentType() string {
	switch p.Kind {
	case KindText:
		if p.Seed&1 == 0 {
			return "text/css"
		}
		return "application/javascript"
	case KindBinary:
		if p.Seed&1 == 0 {
			return "image/jpeg"
		}
		return "image/png"
	case KindCollision:
		return "application/octet-stream"
	}
	return "text/html; charset=utf-8"
}

// mimeType is ContentType without parameters, for the ARC record line.
func (p Payload) mimeType() string {
	ct := p.ContentType()
	for i := 0; i < len(ct); i++ {
		if ct[i] == ';' {
			return ct[:i]
		}
	}
	return ct
}

// StoredSize is the number of bytes the payload occupies in the record:
// Size, plus the chunked framing when Chunked.
func (p Payload) StoredSize() int64 {
	if !p.Chunked {
		return p.Size
	}
	n := int64(len(lastChunk))
	p.chunks(func(c int64) { n += int64(chunkHeaderLen(c)) + c + 2 })
	return n
}

// WriteTo writes the payload's stored bytes to w.
func (p Payload) WriteTo(w io.Writer) (int64, error) {
	return p.write(w, make([]byte, 32<<10))
}

// Bytes returns the payload's stored bytes; meant for tests and small payloads.
func (p Payload) Bytes() []byte {
	sw := sliceWriter{b: make([]byte, 0, p.StoredSize())}
	p.write(&sw, make([]byte, 32<<10))
	return sw.b
}

const lastChunk = "0\r\n\r\n"

// chunks calls f with the size of each chunk of the chunked framing, in order.
func (p Payload) chunks(f func(int64)) {
	r := rand.NewPCG(p.Seed, 0x6368756e6b6564)
	for left := p.Size; left > 0; {
		c := min(int64(r.Uint64()%16384)+1, left)
		f(c)
		left -= c
	}
}

func chunkHeaderLen(c int64) int {
	n := 2 // CRLF
	for ; c > 0; c >>= 4 {
		n++
	}
	return n
}

// write writes the stored bytes to w through buf.
func (p Payload) write(w io.Writer, buf []byte) (int64, error) {
	g := newContentGen(p)
	defer g.release()
	var total int64
	put := func(b []byte) error {
		n, err := w.Write(b)
		total += int64(n)
		return err
	}
	content := func(n int64) error {
		for n > 0 {
			k := int(min(n, int64(len(buf))))
			g.read(buf[:k])
			if err := put(buf[:k]); err != nil {
				return err
			}
			n -= int64(k)
		}
		return nil
	}
	if !p.Chunked {
		return total, content(p.Size)
	}
	var err error
	var hdr []byte
	p.chunks(func(c int64) {
		if err != nil {
			return
		}
		hdr = strconv.AppendInt(hdr[:0], c, 16)
		hdr = append(hdr, '\r', '\n')
		if err = put(hdr); err == nil {
			if err = content(c); err == nil {
				err = put([]byte("\r\n"))
			}
		}
	})
	if err == nil {
		err = put([]byte(lastChunk))
	}
	return total, err
}

// contentGen produces a payload's content bytes (without chunked framing)
// in order: head, then body from a generator, then tail.
type contentGen struct {
	head, tail []byte
	hl, bl, tl int64 // lengths of the three parts actually used
	pos        int64
	words      *wordGen
	rnd        *rand.ChaCha8
}

var (
	htmlTail = []byte("\n</p>\n</body>\n</html>\n")
	magics   = [2][]byte{{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}}
)

func newContentGen(p Payload) *contentGen {
	g := &contentGen{}
	words := false
	switch p.Kind {
	case KindHTML:
		g.head = fmt.Appendf(nil, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Page %016x</title>\n</head>\n<body>\n<p>", p.Seed)
		g.tail = htmlTail
		words = true
	case KindText:
		g.head = fmt.Appendf(nil, "/* %016x */\n", p.Seed)
		words = true
	case KindBinary:
		g.head = magics[p.Seed&1]
	case KindCollision:
		g.head = []byte(p.Prefix)
		words = true
	}
	g.hl = min(int64(len(g.head)), p.Size)
	if p.Size >= int64(len(g.head)+len(g.tail)) {
		g.tl = int64(len(g.tail))
	}
	g.bl = p.Size - g.hl - g.tl
	switch {
	case g.bl == 0:
	case words:
		g.words = newWordGen(p.Seed, p.Kind != KindText, g.bl)
	default:
		var s [32]byte
		binary.LittleEndian.PutUint64(s[:], p.Seed)
		binary.LittleEndian.PutUint64(s[8:], 0x62696e617279)
		g.rnd = rand.NewChaCha8(s)
	}
	return g
}

// release returns the generator's buffers for reuse.
func (g *contentGen) release() {
	if g.words != nil {
		wordBufs.Put(&g.words.buf)
		g.words = nil
	}
}

// read fills b with the next len(b) content bytes.
func (g *contentGen) read(b []byte) {
	for len(b) > 0 {
		var n int
		switch {
		case g.pos < g.hl:
			n = copy(b, g.head[g.pos:g.hl])
		case g.pos < g.hl+g.bl:
			n = int(min(int64(len(b)), g.hl+g.bl-g.pos))
			if g.rnd != nil {
				g.rnd.Read(b[:n])
			} else {
				g.words.read(b[:n])
			}
		default:
			n = copy(b, g.tail[g.pos-g.hl-g.bl:])
			if n == 0 {
				panic("gen: read past the end of a payload")
			}
		}
		g.pos += int64(n)
		b = b[n:]
	}
}

// vocab is a fixed list of pseudo-words; text is drawn from it, which makes
// pages compress about as well as real HTML does.
var vocab = func() [1024][]byte {
	var v [1024][]byte
	syll := []string{"ka", "lo", "mi", "ne", "ta", "ri", "su", "ve", "do", "pa", "ge", "an", "or", "est", "ing", "th", "ch", "on", "ar", "el", "us", "ber", "man", "sto"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range v {
		n := 1 + r.IntN(3)
		for range n {
			v[i] = append(v[i], syll[r.IntN(len(syll))]...)
		}
	}
	return v
}()

// wordGen produces an endless stream of words, in blocks, so that the
// stream does not depend on the sizes it is read in. The block size depends
// only on the length wanted, so short payloads cost little.
type wordGen struct {
	rng   rand.PCG
	html  bool
	block int
	buf   []byte
	pend  []byte
}

const wordBlock = 16 << 10

var wordBufs = sync.Pool{New: func() any { b := make([]byte, 0, wordBlock+256); return &b }}

// newWordGen returns a generator for n bytes of words.
func newWordGen(seed uint64, html bool, n int64) *wordGen {
	g := &wordGen{html: html, block: int(min(n, wordBlock)), buf: (*wordBufs.Get().(*[]byte))[:0]}
	g.rng.Seed(seed, 0x776f726473)
	return g
}

func (g *wordGen) read(b []byte) {
	for len(b) > 0 {
		if len(g.pend) == 0 {
			g.refill()
		}
		n := copy(b, g.pend)
		g.pend = g.pend[n:]
		b = b[n:]
	}
}

func (g *wordGen) refill() {
	b := g.buf[:0]
	for len(b) < g.block {
		r := g.rng.Uint64()
		for range 6 {
			b = append(b, vocab[r&1023]...)
			b = append(b, ' ')
			r >>= 10
		}
		switch r & 15 {
		case 0:
			if g.html {
				b = append(b, ".</p>\n<p>"...)
			} else {
				b = append(b, ";\n"...)
			}
		case 1, 2, 3:
			b = append(b, ". "...)
		case 4:
			b = append(b, ",\n"...)
		}
	}
	g.buf = b
	g.pend = b
}

// sliceWriter appends what is written to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
