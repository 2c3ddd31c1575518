package cdx

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
)

// ZipNum is the form of large indexes that pywb, py-wacz, cdxj-indexer and
// the Browsertrix crawler write: the sorted lines cut into blocks of N
// lines, each block one gzip member of a block file (".cdx.gz"), and a
// summary (".idx", pywb also reads ".summary") of one line per block with
// its first line's key and where the block is. Readers binary-search the
// summary and inflate only the blocks they need, so a summary that does not
// match its blocks breaks every lookup.
//
// Two spellings of the summary are known:
//
//   - IdxTab, pywb's and the Internet Archive's: "KEY\tPART\tOFFSET\tLENGTH"
//     and an optional fifth field, the block's number (1-based). PART names
//     the block file through a ".loc" file beside the summary ("PART\tPATH"
//     lines, several paths being copies). The sample of pywb's repository
//     has blocks of 5 lines whose last line has no "\n".
//   - IdxJSON, cdxj-indexer's (and py-wacz's, which uses it, 1024 lines per
//     block) and the Browsertrix crawler's (256 lines): a first line
//     `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`,
//     then "KEY {json}" with "offset" and "length", and "digest" (the
//     block's bytes' SHA-256, "sha256:HEX") when asked for; Browsertrix also
//     writes "filename" on every line. cdxj-indexer writes Python's
//     separators (", ", ": "), Browsertrix JavaScript's ("," and ":").
//     Every block's last line ends with "\n".
//
// KEY is the block's first line up to its JSON (CDXJ) or its first two
// fields (CDX): "urlkey timestamp".

// IdxForm is the spelling of a ZipNum summary.
type IdxForm uint8

// The summary spellings.
const (
	IdxTab  IdxForm = 1 + iota // KEY \t PART \t OFFSET \t LENGTH [\t NUMBER]
	IdxJSON                    // KEY {"offset": N, "length": N, ...}
)

func (f IdxForm) String() string {
	switch f {
	case IdxTab:
		return "tab-separated"
	case IdxJSON:
		return "JSON"
	}
	return "?"
}

// MetaFormat is the "format" of a JSON summary's "!meta" line.
const MetaFormat = "cdxj-gzip-1.0"

// Block is a line of a ZipNum summary: where one block is.
type Block struct {
	Number int64 // of the summary line, 1-based
	Form   IdxForm
	Raw    []byte // the line as read, without "\n"
	Key    []byte
	// Part is the block file's name: IdxTab's second field (looked up in
	// the .loc), IdxJSON's "filename" ("" when the line has none).
	Part           string
	Offset, Length int64
	// Seq is IdxTab's fifth field, the block's number; 0 when absent.
	Seq int64
	// Digest is IdxJSON's "digest", "sha256:HEX"; "" when absent.
	Digest string

	keyEnd                     int
	offset, length, digest     valueSpan
	offsetQuoted, lengthQuoted bool
}

// valueSpan is where a value is in Block.Raw; end is 0 when absent.
type valueSpan struct{ start, end int }

// IdxError is a summary line that is not what a ZipNum summary holds.
type IdxError struct {
	Name string
	Line int64
	Err  error
}

func (e *IdxError) Error() string { return fmt.Sprintf("%s: line %d: %v", e.Name, e.Line, e.Err) }
func (e *IdxError) Unwrap() error { return e.Err }

// ParseBlock parses a summary line (without its "\n") in either
// spelling. Raw is copied.
func ParseBlock(raw []byte, number int64) (*Block, error) {
	b := &Block{Number: number, Raw: bytes.Clone(raw)}
	text := b.Raw
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	var err error
	if bytes.IndexByte(text, '\t') >= 0 {
		err = b.parseTab(text)
	} else {
		err = b.parseJSON(text)
	}
	if err != nil {
		return nil, err
	}
	if len(b.Key) == 0 {
		return nil, errors.New("no key")
	}
	return b, nil
}

func (b *Block) parseTab(text []byte) error {
	b.Form = IdxTab
	fields := bytes.Split(text, []byte("\t"))
	if len(fields) != 4 && len(fields) != 5 {
		return fmt.Errorf("%d tab-separated fields; a ZipNum summary line has 4 or 5 (key, part, offset, length, block number)", len(fields))
	}
	pos := make([]int, len(fields))
	for i := 1; i < len(fields); i++ {
		pos[i] = pos[i-1] + len(fields[i-1]) + 1
	}
	b.Key, b.keyEnd = fields[0], len(fields[0])
	b.Part = string(fields[1])
	if b.Part == "" {
		return errors.New("no part name")
	}
	var ok bool
	if b.Offset, ok = parseUint(fields[2]); !ok {
		return fmt.Errorf("offset %q is no number", fields[2])
	}
	if b.Length, ok = parseUint(fields[3]); !ok {
		return fmt.Errorf("length %q is no number", fields[3])
	}
	b.offset = valueSpan{pos[2], pos[2] + len(fields[2])}
	b.length = valueSpan{pos[3], pos[3] + len(fields[3])}
	if len(fields) == 5 {
		if b.Seq, ok = parseUint(fields[4]); !ok {
			return fmt.Errorf("block number %q is no number", fields[4])
		}
	}
	return nil
}

func (b *Block) parseJSON(text []byte) error {
	b.Form = IdxJSON
	// The object is the one that ends the line: the first " {" from
	// which the rest parses (a key may hold " {").
	var lastErr error = errors.New(`neither "KEY\tPART\tOFFSET\tLENGTH" nor "KEY {json}"`)
	for from := 0; ; {
		i := bytes.Index(text[from:], []byte(" {"))
		if i < 0 {
			return lastErr
		}
		i += from
		from = i + 1
		saved := *b
		if err := b.parseObject(text, i+1); err != nil {
			*b = saved
			lastErr = err
			continue
		}
		b.Key, b.keyEnd = text[:i], i
		return nil
	}
}

func (b *Block) parseObject(text []byte, at int) error {
	s := scanner{b: text, i: at + 1}
	seen := map[string]bool{}
	for members := 0; ; members++ {
		s.ws()
		if s.i >= len(text) {
			return errors.New("JSON object not closed")
		}
		if text[s.i] == '}' {
			s.i++
			break
		}
		if members > 0 {
			if text[s.i] != ',' {
				return fmt.Errorf("JSON: want ',' or '}' at byte %d", s.i)
			}
			s.i++
			s.ws()
		}
		keyStart := s.i
		kEnd, kEsc, err := s.str()
		if err != nil {
			return err
		}
		key := string(text[keyStart+1 : kEnd])
		s.ws()
		if s.i >= len(text) || text[s.i] != ':' {
			return fmt.Errorf("JSON: want ':' at byte %d", s.i)
		}
		s.i++
		s.ws()
		start := s.i
		quoted := s.i < len(text) && text[s.i] == '"'
		if quoted {
			_, _, err = s.str()
		} else {
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
		v := valueSpan{start, s.i}
		if kEsc || seen[key] {
			return fmt.Errorf("JSON: key %q twice or escaped", key)
		}
		seen[key] = true
		switch key {
		case "offset", "length":
			raw := text[v.start:v.end]
			if quoted {
				raw = raw[1 : len(raw)-1]
			}
			n, ok := parseUint(raw)
			if !ok {
				return fmt.Errorf("%s %s is no number", key, text[v.start:v.end])
			}
			if key == "offset" {
				b.Offset, b.offset, b.offsetQuoted = n, v, quoted
			} else {
				b.Length, b.length, b.lengthQuoted = n, v, quoted
			}
		case "digest":
			d := string(text[v.start:v.end])
			if !quoted || !isSHA256Label(d[1:len(d)-1]) {
				return fmt.Errorf(`digest %s is not "sha256:" and 64 hex digits, what the ZipNum writers give`, d)
			}
			b.Digest, b.digest = d[1:len(d)-1], v
		case "filename":
			if !quoted {
				return fmt.Errorf("filename %s is no string", text[v.start:v.end])
			}
			name, err := appendUnquoted(nil, text[v.start+1:v.end-1])
			if err != nil {
				return err
			}
			b.Part = string(name)
		default:
			// A value this package does not know may depend on the
			// block: it could not be kept right.
			return fmt.Errorf("JSON key %q is not one of a ZipNum summary's (offset, length, digest, filename)", key)
		}
	}
	s.ws()
	if s.i != len(text) {
		return fmt.Errorf("JSON: %d bytes after the object", len(text)-s.i)
	}
	if b.offset.end == 0 || b.length.end == 0 {
		return errors.New(`JSON without "offset" and "length"`)
	}
	return nil
}

func isSHA256Label(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// AppendTo appends the summary line for the block with key, offset,
// length and digest (IdxJSON with a digest only), spelt as b was: every
// other byte of Raw is kept.
func (b *Block) AppendTo(dst, key []byte, offset, length int64, digest string) []byte {
	type splice struct {
		v      valueSpan
		val    string
		quoted bool
	}
	ss := []splice{
		{valueSpan{0, b.keyEnd}, string(key), false},
		{b.offset, strconv.FormatInt(offset, 10), b.offsetQuoted},
		{b.length, strconv.FormatInt(length, 10), b.lengthQuoted},
	}
	if b.digest.end > 0 {
		ss = append(ss, splice{b.digest, digest, true})
	}
	// In order of position (the JSON keys may come in any order).
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].v.start < ss[j-1].v.start; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
	pos := 0
	for _, s := range ss {
		dst = append(dst, b.Raw[pos:s.v.start]...)
		if s.quoted {
			dst = append(appendJSONString(append(dst, '"'), s.val), '"')
		} else {
			dst = append(dst, s.val...)
		}
		pos = s.v.end
	}
	return append(dst, b.Raw[pos:]...)
}

// IdxMeta is a JSON summary's "!meta 0 {json}" line.
type IdxMeta struct {
	Raw      []byte
	Format   string // "cdxj-gzip-1.0"
	Filename string // the block file
}

func parseMeta(raw []byte) (*IdxMeta, error) {
	m := &IdxMeta{Raw: bytes.Clone(raw)}
	text := bytes.TrimSuffix(m.Raw, []byte("\r"))
	rest, ok := bytes.CutPrefix(text, []byte("!meta "))
	if !ok {
		return nil, errors.New(`a "!" line that is not "!meta 0 {json}"`)
	}
	i := bytes.IndexByte(rest, '{')
	if i < 0 {
		return nil, errors.New(`"!meta" without its JSON`)
	}
	s := scanner{b: rest, i: i + 1}
	for members := 0; ; members++ {
		s.ws()
		if s.i < len(rest) && rest[s.i] == '}' {
			s.i++
			break
		}
		if members > 0 {
			if s.i >= len(rest) || rest[s.i] != ',' {
				return nil, errors.New(`"!meta": bad JSON`)
			}
			s.i++
			s.ws()
		}
		kStart := s.i
		kEnd, _, err := s.str()
		if err != nil {
			return nil, fmt.Errorf(`"!meta": %w`, err)
		}
		key := string(rest[kStart+1 : kEnd])
		s.ws()
		if s.i >= len(rest) || rest[s.i] != ':' {
			return nil, errors.New(`"!meta": bad JSON`)
		}
		s.i++
		s.ws()
		vStart := s.i
		if s.i < len(rest) && rest[s.i] == '"' {
			_, _, err = s.str()
		} else {
			err = s.skipValue()
		}
		if err != nil {
			return nil, fmt.Errorf(`"!meta": %w`, err)
		}
		v := rest[vStart:s.i]
		if len(v) >= 2 && v[0] == '"' {
			u, err := appendUnquoted(nil, v[1:len(v)-1])
			if err != nil {
				return nil, err
			}
			switch key {
			case "format":
				m.Format = string(u)
			case "filename":
				m.Filename = string(u)
			}
		}
	}
	if m.Format != "" && m.Format != MetaFormat {
		return nil, fmt.Errorf(`"!meta" format %q: only %q is known`, m.Format, MetaFormat)
	}
	return m, nil
}

// IdxReader reads a ZipNum summary.
type IdxReader struct {
	name string
	br   *bufio.Reader
	line int64
	form IdxForm
	// Meta is the "!meta" line, once read (JSON summaries).
	Meta *IdxMeta
}

// NewIdxReader returns a reader of the summary r, named name in errors.
func NewIdxReader(r io.Reader, name string) *IdxReader {
	return &IdxReader{name: name, br: bufio.NewReaderSize(r, 64<<10)}
}

// Name is the summary's name, as given.
func (r *IdxReader) Name() string { return r.name }

// Form is the summary's spelling (0 before its first block).
func (r *IdxReader) Form() IdxForm { return r.form }

// maxIdxLine bounds a summary line: a key is a URL.
const maxIdxLine = 1 << 20

// Next returns the next block, or io.EOF after the last. A line that is
// no summary line is an *IdxError: the summary cannot be trusted, and
// reading stops.
func (r *IdxReader) Next() (*Block, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) > 0 && line[0] == '!' {
			if r.Meta != nil || r.form != 0 {
				return nil, r.errorf(`a "!" line after the first line`)
			}
			if r.Meta, err = parseMeta(line); err != nil {
				return nil, r.errorf("%v", err)
			}
			continue
		}
		b, err := ParseBlock(line, r.line)
		if err != nil {
			return nil, r.errorf("%v", err)
		}
		switch {
		case r.form == 0:
			r.form = b.Form
		case b.Form != r.form:
			return nil, r.errorf("a %s line in a %s summary", b.Form, r.form)
		}
		if b.Form == IdxTab && r.Meta != nil {
			return nil, r.errorf(`a tab-separated line after "!meta"`)
		}
		return b, nil
	}
}

func (r *IdxReader) errorf(format string, args ...any) error {
	return &IdxError{Name: r.name, Line: r.line, Err: fmt.Errorf(format, args...)}
}

func (r *IdxReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxIdxLine {
			line, err = r.br.ReadSlice('\n')
			long = append(long, line...)
		}
		if len(long) > maxIdxLine {
			r.line++
			return nil, r.errorf("longer than %d bytes", maxIdxLine)
		}
		line = long
	}
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err != nil && err != io.EOF:
		return nil, fmt.Errorf("%s: after line %d: %w", r.name, r.line, err)
	}
	r.line++
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, r.errorf("an empty line")
	}
	return line, nil
}

// BlockError is a block that is not where, or what, its summary line says.
type BlockError struct {
	File   string // the block file
	Offset int64
	Idx    string // the summary
	Line   int64  // its line
	Err    error
}

func (e *BlockError) Error() string {
	return fmt.Sprintf("%s: offset %d (the block of %s line %d): %v", e.File, e.Offset, e.Idx, e.Line, e.Err)
}
func (e *BlockError) Unwrap() error { return e.Err }

// BlockReader reads the lines of one block: the gzip member at the block's
// offset, which must end exactly at offset + length (and, when the summary
// gives one, have its digest). A block that does not fails the Read that
// reaches its end, with a *BlockError.
type BlockReader struct {
	b       *Block
	file    string
	idx     string
	section *io.SectionReader
	src     *bufio.Reader
	z       *gzip.Reader
	sum     hash.Hash
	hashing bool
	last    byte
	got     bool
	eof     bool
	lines   int64
}

// MaxBlockLength bounds a block's length as its summary gives it: a block
// is held in memory when it is rewritten, and the writers' blocks are tens
// of kilobytes.
const MaxBlockLength = 64 << 20

// NewBlockReader starts reading block b (of the summary idx) from file,
// named name in errors. When raw is not nil, the block's bytes as read
// are appended to it (to copy a block that stays as it was).
func NewBlockReader(file io.ReaderAt, name, idx string, b *Block, raw *bytes.Buffer) (*BlockReader, error) {
	br := &BlockReader{}
	return br, br.Reset(file, name, idx, b, raw)
}

// Reset starts reading another block as NewBlockReader does, reusing br's
// buffers.
func (br *BlockReader) Reset(file io.ReaderAt, name, idx string, b *Block, raw *bytes.Buffer) error {
	*br = BlockReader{b: b, file: name, idx: idx, src: br.src, z: br.z, sum: br.sum, section: br.section}
	if b.Length == 0 || b.Length > MaxBlockLength {
		return br.errorf("length %d: a block is a gzip member of 1 to %d bytes", b.Length, int64(MaxBlockLength))
	}
	if br.section == nil {
		br.section = new(io.SectionReader)
	}
	*br.section = *io.NewSectionReader(file, b.Offset, b.Length)
	var src io.Reader = br.section
	if raw != nil {
		src = io.TeeReader(src, raw)
	}
	if b.Digest != "" {
		if br.sum == nil {
			br.sum = sha256.New()
		}
		br.sum.Reset()
		src = io.TeeReader(src, br.sum)
	}
	if br.src == nil {
		br.src = bufio.NewReaderSize(src, 32<<10)
	} else {
		br.src.Reset(src)
	}
	var err error
	if br.z == nil {
		br.z, err = gzip.NewReader(br.src)
	} else {
		err = br.z.Reset(br.src)
	}
	if err != nil {
		if err == io.EOF {
			err = errors.New("nothing there (beyond the end of the file?)")
		}
		br.z = nil
		return br.errorf("not gzip: %v", err)
	}
	br.z.Multistream(false)
	br.hashing = b.Digest != ""
	return nil
}

func (br *BlockReader) errorf(format string, args ...any) error {
	return &BlockError{File: br.file, Offset: br.b.Offset, Idx: br.idx, Line: br.b.Number, Err: fmt.Errorf(format, args...)}
}

// Read reads the block's inflated bytes.
func (br *BlockReader) Read(p []byte) (int, error) {
	if br.eof {
		return 0, io.EOF
	}
	n, err := br.z.Read(p)
	if n > 0 {
		br.last, br.got = p[n-1], true
		br.lines += int64(bytes.Count(p[:n], []byte("\n")))
	}
	switch {
	case err == io.EOF:
		if err := br.end(); err != nil {
			return n, err
		}
		br.eof = true
		return n, io.EOF
	case err != nil:
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return n, br.errorf("the gzip member does not end within the %d bytes the summary gives the block (or the file ends first)", br.b.Length)
		}
		return n, br.errorf("gzip: %v", err)
	}
	return n, nil
}

// end checks, at the end of the member, that the block ends there.
func (br *BlockReader) end() error {
	rest, _ := io.Copy(io.Discard, br.src)
	if rest > 0 {
		return br.errorf("the gzip member ends %d bytes before the end the summary gives the block (length %d)", rest, br.b.Length)
	}
	if br.hashing {
		if got := "sha256:" + hex.EncodeToString(br.sum.Sum(nil)); got != br.b.Digest {
			return br.errorf("the block's digest is %s, the summary says %s", got, br.b.Digest)
		}
	}
	if !br.got {
		return br.errorf("an empty block")
	}
	return nil
}

// EndsWithNewline reports whether the block's last line ends with "\n"
// (valid after Read returned io.EOF).
func (br *BlockReader) EndsWithNewline() bool { return br.last == '\n' }

// Lines is the number of lines read so far.
func (br *BlockReader) Lines() int64 {
	if br.eof && br.got && br.last != '\n' {
		return br.lines + 1
	}
	return br.lines
}

// ZipNumKey is the key a ZipNum summary gives a block that starts with
// line: a CDXJ line up to its JSON, the first two fields of a CDX line
// ("urlkey timestamp").
func ZipNumKey(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if isCDXJ(line) {
		if i, ok := jsonStart(line); ok {
			return bytes.TrimRight(line[:i], " ")
		}
		i := bytes.IndexByte(line, ' ')
		j := bytes.IndexByte(line[i+1:], ' ')
		return line[:i+1+j]
	}
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return line
	}
	j := bytes.IndexByte(line[i+1:], ' ')
	if j < 0 {
		return line
	}
	return line[:i+1+j]
}

// BlockWriter compresses the lines of one block into one gzip member, as
// every ZipNum writer does, with or without a "\n" after the last line.
type BlockWriter struct {
	z       *gzmulti.Writer
	pending bool
}

// Start begins a block written to w.
func (bw *BlockWriter) Start(w io.Writer) {
	if bw.z == nil {
		bw.z = gzmulti.NewWriter(w, gzip.DefaultCompression)
	} else {
		bw.z.Reset(w)
	}
	bw.pending = false
}

// Line adds a line (without "\n").
func (bw *BlockWriter) Line(line []byte) error {
	if bw.pending {
		if _, err := bw.z.Write([]byte{'\n'}); err != nil {
			return err
		}
	}
	bw.pending = true
	_, err := bw.z.Write(line)
	return err
}

// End ends the member, the last line followed by "\n" if finalNewline.
func (bw *BlockWriter) End(finalNewline bool) error {
	var last []byte // an empty block is an empty member
	if bw.pending && finalNewline {
		last = []byte{'\n'}
	}
	if _, err := bw.z.Write(last); err != nil {
		return err
	}
	_, err := bw.z.CloseMember()
	return err
}

// ZipNumStyle is how a ZipNum writer spells its index.
type ZipNumStyle struct {
	Form  IdxForm
	Lines int // per block
	// FinalNewline ends each block's last line with "\n" (cdxj-indexer,
	// Browsertrix), or not (pywb's sample).
	FinalNewline bool
	// Part is IdxTab's part name; Numbered writes the block numbers.
	Part     string
	Numbered bool
	// Filename is the block file's name in IdxJSON's "!meta" line (Meta)
	// and on each line (LineFilename); Digest adds each block's SHA-256;
	// Compact writes JavaScript's separators, else Python's.
	Filename                            string
	Meta, LineFilename, Digest, Compact bool
}

// The styles of the known writers.
var (
	// PywbStyle is pywb's sample: tab-separated, numbered, no final "\n".
	PywbStyle = ZipNumStyle{Form: IdxTab, Lines: 3000, Part: "index", Numbered: true}
	// CDXJIndexerStyle is cdxj-indexer -c with -d (py-wacz: 1024 lines).
	CDXJIndexerStyle = ZipNumStyle{Form: IdxJSON, Lines: 300, FinalNewline: true, Filename: "index.cdx.gz", Meta: true, Digest: true}
	// BrowsertrixStyle is the Browsertrix crawler's WACZ index.
	BrowsertrixStyle = ZipNumStyle{Form: IdxJSON, Lines: 256, FinalNewline: true, Filename: "index.cdx.gz", Meta: true, LineFilename: true, Digest: true, Compact: true}
)

// ZipNumWriter writes a ZipNum index afresh from sorted lines: the blocks
// to one writer, the summary to another.
type ZipNumWriter struct {
	style  ZipNumStyle
	blocks io.Writer
	idx    *bufio.Writer
	bw     BlockWriter
	buf    bytes.Buffer
	key    []byte
	n      int
	offset int64
	seq    int64
	line   []byte
	err    error
}

// NewZipNumWriter returns a writer of a ZipNum in style; call Close at the
// end (it does not close blocks or idx).
func NewZipNumWriter(blocks, idx io.Writer, style ZipNumStyle) *ZipNumWriter {
	if style.Lines < 1 {
		style.Lines = 1
	}
	return &ZipNumWriter{style: style, blocks: blocks, idx: bufio.NewWriter(idx)}
}

// WriteLine adds a line (without "\n").
func (w *ZipNumWriter) WriteLine(line []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.offset == 0 && w.n == 0 && w.style.Form == IdxJSON && w.style.Meta {
		w.line = append(w.line[:0], "!meta 0 "...)
		w.line = w.appendJSON(w.line, [][2]string{{"format", strconv.Quote(MetaFormat)}, {"filename", jsonQuote(w.style.Filename)}})
		w.idx.Write(append(w.line, '\n'))
	}
	if w.n == 0 {
		w.key = append(w.key[:0], ZipNumKey(line)...)
		w.buf.Reset()
		w.bw.Start(&w.buf)
	}
	if w.err = w.bw.Line(line); w.err != nil {
		return w.err
	}
	if w.n++; w.n == w.style.Lines {
		w.err = w.flush()
	}
	return w.err
}

func (w *ZipNumWriter) flush() error {
	if err := w.bw.End(w.style.FinalNewline); err != nil {
		return err
	}
	block := w.buf.Bytes()
	if _, err := w.blocks.Write(block); err != nil {
		return err
	}
	w.seq++
	st := w.style
	l := append(w.line[:0], w.key...)
	switch st.Form {
	case IdxTab:
		l = append(append(l, '\t'), st.Part...)
		l = strconv.AppendInt(append(l, '\t'), w.offset, 10)
		l = strconv.AppendInt(append(l, '\t'), int64(len(block)), 10)
		if st.Numbered {
			l = strconv.AppendInt(append(l, '\t'), w.seq, 10)
		}
	default:
		members := [][2]string{{"offset", strconv.FormatInt(w.offset, 10)}, {"length", strconv.Itoa(len(block))}}
		if st.Digest {
			sum := sha256.Sum256(block)
			members = append(members, [2]string{"digest", `"sha256:` + hex.EncodeToString(sum[:]) + `"`})
		}
		if st.LineFilename {
			members = append(members, [2]string{"filename", jsonQuote(st.Filename)})
		}
		l = w.appendJSON(append(l, ' '), members)
	}
	w.line = l
	w.offset += int64(len(block))
	w.n = 0
	_, err := w.idx.Write(append(l, '\n'))
	return err
}

func (w *ZipNumWriter) appendJSON(dst []byte, members [][2]string) []byte {
	sep, colon := ", ", ": "
	if w.style.Compact {
		sep, colon = ",", ":"
	}
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, sep...)
		}
		dst = append(append(append(dst, '"'), m[0]...), '"')
		dst = append(append(dst, colon...), m[1]...)
	}
	return append(dst, '}')
}

func jsonQuote(s string) string {
	return string(append(appendJSONString([]byte{'"'}, s), '"'))
}

// Close writes the last block and flushes the summary.
func (w *ZipNumWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.n > 0 {
		if w.err = w.flush(); w.err != nil {
			return w.err
		}
	}
	w.err = errors.New("cdx: ZipNumWriter closed")
	return w.idx.Flush()
}
