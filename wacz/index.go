package wacz

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"warcdedup/cdx"
)

// IndexKind is the form of a package's index.
type IndexKind int

// The index forms a WACZ has.
const (
	// PlainIndex is one CDXJ file, indexes/index.cdxj (ArchiveWeb.page:
	// indexes/index.cdx).
	PlainIndex IndexKind = iota + 1
	// ZipNumIndex is indexes/index.cdx.gz, CDXJ in gzip members ("blocks")
	// of the same number of lines, with indexes/index.idx: a "!meta" line,
	// then per block its first line's urlkey and timestamp and where the
	// block is: {"offset", "length", "digest", "filename"}.
	ZipNumIndex
	// GzipIndex is a gzip CDXJ file without an .idx: read, never rebuilt.
	GzipIndex
)

func (k IndexKind) String() string {
	switch k {
	case PlainIndex:
		return "plain CDXJ"
	case ZipNumIndex:
		return "ZipNum"
	case GzipIndex:
		return "gzip CDXJ"
	}
	return "?"
}

// Index is one index of a package.
type Index struct {
	Kind IndexKind
	// CDX is the member holding the lines (plain, or gzip blocks).
	CDX *Member
	// Idx is a ZipNum index's block index, nil otherwise.
	Idx *Member
}

// Name names the index in messages: its member(s).
func (ix *Index) Name() string {
	if ix.Idx != nil {
		return ix.CDX.Name + " + " + ix.Idx.Name
	}
	return ix.CDX.Name
}

// Indexes finds the package's indexes: under indexes/, each .idx with
// the .cdx.gz its !meta line names (by default the .idx's name with
// .cdx.gz), and each other .cdx, .cdxj, .cdx.gz or .cdxj.gz file.
func (p *Package) Indexes() ([]*Index, error) {
	var out []*Index
	claimed := map[string]bool{}
	for _, m := range p.Members {
		if !strings.HasPrefix(m.Name, "indexes/") || !strings.HasSuffix(m.Name, ".idx") {
			continue
		}
		meta, err := p.readIdxMeta(m)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(path.Base(m.Name), ".idx") + ".cdx.gz"
		if meta != nil && meta.filename != "" {
			name = meta.filename
		}
		cdxName := path.Join(path.Dir(m.Name), name)
		cdx := p.byName[cdxName]
		if cdx == nil {
			return nil, errorf(p.Name, m.Name, -1, ErrIndex, "its blocks' file %s is not in the package", cdxName)
		}
		claimed[cdxName], claimed[m.Name] = true, true
		out = append(out, &Index{Kind: ZipNumIndex, CDX: cdx, Idx: m})
	}
	for _, m := range p.Members {
		if !strings.HasPrefix(m.Name, "indexes/") || claimed[m.Name] || m.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(m.Name, ".cdx") || strings.HasSuffix(m.Name, ".cdxj"):
			out = append(out, &Index{Kind: PlainIndex, CDX: m})
		case strings.HasSuffix(m.Name, ".cdx.gz") || strings.HasSuffix(m.Name, ".cdxj.gz"):
			out = append(out, &Index{Kind: GzipIndex, CDX: m})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CDX.HeaderOffset < out[j].CDX.HeaderOffset })
	return out, nil
}

// idxMeta is what an .idx's "!meta" line says.
type idxMeta struct {
	line     []byte // as written, without its line end
	filename string
}

func (p *Package) readIdxMeta(m *Member) (*idxMeta, error) {
	rc := p.Open(m)
	defer rc.Close()
	br := bufio.NewReader(rc)
	line, err := br.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return nil, err
	}
	line = bytes.TrimRight(line, "\r\n")
	if !bytes.HasPrefix(line, []byte("!meta")) {
		return nil, nil
	}
	meta := &idxMeta{line: line}
	if i := bytes.IndexByte(line, '{'); i >= 0 {
		var v struct {
			Filename string `json:"filename"`
		}
		if json.Unmarshal(line[i:], &v) == nil {
			meta.filename = v.Filename
		}
	}
	return meta, nil
}

// IndexReader returns the index's lines as one plain CDXJ stream: a
// plain index as it is, a gzip or ZipNum one inflated, each gzip member
// ending its last line (pywb's ZipNum blocks have no final line feed).
// Reading it to the end checks the member's CRC-32.
func (p *Package) IndexReader(ix *Index) io.ReadCloser {
	rc := p.Open(ix.CDX)
	if ix.Kind == PlainIndex {
		return rc
	}
	return &gzipLines{rc: rc, src: bufio.NewReaderSize(rc, 1<<20), name: p.Name + ": " + ix.CDX.Name}
}

// gzipLines inflates gzip members one after the other, adding a line
// feed after a member whose data does not end with one.
type gzipLines struct {
	rc      io.ReadCloser
	src     *bufio.Reader
	zr      *gzip.Reader
	name    string
	last    byte
	pending bool // a line feed to give before the next member
	done    bool
}

func (g *gzipLines) Read(p []byte) (int, error) {
	for {
		if g.pending {
			if len(p) == 0 {
				return 0, nil
			}
			g.pending = false
			p[0], g.last = '\n', '\n'
			return 1, nil
		}
		if g.done {
			return 0, io.EOF
		}
		if g.zr == nil {
			if _, err := g.src.Peek(1); err == io.EOF {
				g.done = true
				continue
			}
			zr, err := gzip.NewReader(g.src)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", g.name, err)
			}
			zr.Multistream(false)
			g.zr = zr
		}
		n, err := g.zr.Read(p)
		if n > 0 {
			g.last = p[n-1]
		}
		if err == io.EOF {
			if err := g.zr.Close(); err != nil {
				return n, fmt.Errorf("%s: %w", g.name, err)
			}
			g.zr = nil
			g.pending = g.last != '\n' && g.last != 0
			g.last = 0
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", g.name, err)
		}
		return n, nil
	}
}

func (g *gzipLines) Close() error { return g.rc.Close() }

// idxBlock is one line of a ZipNum .idx.
type idxBlock struct {
	key            string // the block's first line's "urlkey timestamp"
	offset, length int64
	digest         string // "sha256:HEX", "" if the line has none
	filename       string
	lineNumber     int
}

// idxStyle is how an .idx spells its block lines, to write it back alike.
type idxStyle struct {
	meta         []byte   // the !meta line, kept as it is
	keys         []string // the JSON keys, in order
	colon, comma string
}

// zipNumLayout is what a ZipNum index's blocks look like.
type zipNumLayout struct {
	style         idxStyle
	linesPerBlock int  // of every block but the last
	finalNewline  bool // each block's last line ends with "\n"
	blocks        int
	lines         int64
}

// readIdx reads an .idx: its !meta line and block lines.
func (p *Package) readIdx(ix *Index) ([]idxBlock, idxStyle, error) {
	var st idxStyle
	fail := func(line int, format string, args ...any) error {
		return errorf(p.Name, ix.Idx.Name, -1, ErrIndex, "line %d: %s", line, fmt.Sprintf(format, args...))
	}
	rc := p.Open(ix.Idx)
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, 1<<20)
	var blocks []idxBlock
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if len(line) == 0 {
			continue
		}
		if line[0] == '!' {
			if st.meta == nil && bytes.HasPrefix(line, []byte("!meta")) {
				st.meta = bytes.Clone(line)
			}
			continue
		}
		i := bytes.Index(line, []byte(" {"))
		if i < 0 {
			return nil, st, fail(n, "not a ZipNum block line (key {json})")
		}
		js := line[i+1:]
		keys, err := jsonKeys(js)
		if err != nil {
			return nil, st, fail(n, "%v", err)
		}
		var v struct {
			Offset   *int64 `json:"offset"`
			Length   *int64 `json:"length"`
			Digest   string `json:"digest"`
			Filename string `json:"filename"`
		}
		if err := json.Unmarshal(js, &v); err != nil {
			return nil, st, fail(n, "%v", err)
		}
		if v.Offset == nil || v.Length == nil || *v.Offset < 0 || *v.Length <= 0 {
			return nil, st, fail(n, "no block offset and length")
		}
		if st.keys == nil {
			st.keys = keys
			st.colon, st.comma = ":", ","
			if bytes.Contains(js, []byte(`": `)) {
				st.colon = ": "
			}
			if bytes.Contains(js, []byte(`, "`)) {
				st.comma = ", "
			}
		}
		blocks = append(blocks, idxBlock{key: string(line[:i]), offset: *v.Offset, length: *v.Length, digest: v.Digest, filename: v.Filename, lineNumber: n})
	}
	if err := sc.Err(); err != nil {
		return nil, st, err
	}
	return blocks, st, nil
}

// jsonKeys lists the keys of a JSON object, in order.
func jsonKeys(js []byte) ([]string, error) {
	n, _, err := parseJSON(js)
	if err != nil {
		return nil, err
	}
	if n.kind != '{' {
		return nil, errors.New("not a JSON object")
	}
	return n.keys, nil
}

// checkZipNum reads a ZipNum index block by block and checks that every
// block is where index.idx says: the blocks follow one another from
// offset 0 to the end of the .cdx.gz, each is one whole gzip member of
// the length given, with the SHA-256 given, whose first line has the key
// given; it calls line with each line in order, and returns the layout.
func (p *Package) checkZipNum(ix *Index, line func([]byte) error) (*zipNumLayout, error) {
	blocks, st, err := p.readIdx(ix)
	if err != nil {
		return nil, err
	}
	lay := &zipNumLayout{style: st, blocks: len(blocks), finalNewline: true}
	fail := func(b *idxBlock, format string, args ...any) error {
		return errorf(p.Name, ix.Idx.Name, -1, ErrIndex, "line %d (block at %d+%d): %s", b.lineNumber, b.offset, b.length, fmt.Sprintf(format, args...))
	}
	rc := p.Open(ix.CDX)
	defer rc.Close()
	src := bufio.NewReaderSize(rc, 1<<20)
	var pos int64
	var zr *gzip.Reader
	var buf bytes.Buffer
	for i := range blocks {
		b := &blocks[i]
		if b.offset != pos {
			return nil, fail(b, "the block before ends at %d", pos)
		}
		if b.filename != "" && b.filename != path.Base(ix.CDX.Name) {
			return nil, fail(b, "names file %q, not %s", b.filename, path.Base(ix.CDX.Name))
		}
		if pos+b.length > ix.CDX.Size {
			return nil, fail(b, "runs past the end of %s (%d bytes)", ix.CDX.Name, ix.CDX.Size)
		}
		h := sha256.New()
		lim := &io.LimitedReader{R: src, N: b.length}
		br := bufio.NewReader(io.TeeReader(lim, h))
		if zr == nil {
			zr, err = gzip.NewReader(br)
		} else {
			err = zr.Reset(br)
		}
		if err != nil {
			return nil, fail(b, "not a gzip member: %v", err)
		}
		zr.Multistream(false)
		buf.Reset()
		if _, err := io.Copy(&buf, zr); err != nil {
			return nil, fail(b, "inflating: %v", err)
		}
		// The member must end exactly at the block's end.
		if extra := int64(br.Buffered()) + lim.N; extra != 0 {
			return nil, fail(b, "the gzip member is %d bytes, not %d", b.length-extra, b.length)
		}
		if b.digest != "" {
			if want := "sha256:" + hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(b.digest, want) {
				return nil, fail(b, "digest %s, the block's is %s", b.digest, want)
			}
		}
		data := buf.Bytes()
		if len(data) == 0 {
			return nil, fail(b, "an empty block")
		}
		if data[len(data)-1] != '\n' {
			lay.finalNewline = false
			data = append(data, '\n')
		}
		count := 0
		for len(data) > 0 {
			j := bytes.IndexByte(data, '\n')
			l := bytes.TrimRight(data[:j], "\r")
			if count == 0 {
				if key := lineKey(l); key != b.key {
					return nil, fail(b, "key %q, the block's first line starts %q", b.key, key)
				}
			}
			if err := line(l); err != nil {
				return nil, err
			}
			count++
			data = data[j+1:]
		}
		if i == 0 {
			lay.linesPerBlock = count
		}
		lay.lines += int64(count)
		pos += b.length
	}
	if pos != ix.CDX.Size {
		return nil, errorf(p.Name, ix.Idx.Name, -1, ErrIndex, "its blocks end at %d, %s has %d bytes", pos, ix.CDX.Name, ix.CDX.Size)
	}
	// Reading to the end checks the member's CRC-32.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return nil, err
	}
	return lay, nil
}

// lineKey is a CDXJ line's "urlkey timestamp": what precedes " {"
// (Browsertrix), or its first two fields.
func lineKey(l []byte) string {
	if i := bytes.Index(l, []byte(" {")); i >= 0 {
		return string(l[:i])
	}
	f := bytes.SplitN(l, []byte(" "), 3)
	if len(f) >= 2 {
		return string(f[0]) + " " + string(f[1])
	}
	return string(l)
}

// zipNumWriter writes CDXJ lines as ZipNum blocks of linesPerBlock lines
// to cdx and their index to idx, in the style of an existing .idx. Each
// block is one gzip member, written as every ZipNum writer of the
// toolchain writes one (cdx.BlockWriter, through gzmulti.Writer), into
// memory first: its .idx line, which precedes it, gives its length and
// digest.
type zipNumWriter struct {
	cdx, idx      io.Writer
	filename      string // the .cdx.gz's base name
	linesPerBlock int
	finalNewline  bool
	style         idxStyle

	// bw compresses the block being written into comp, one gzip member.
	bw       cdx.BlockWriter
	comp     bytes.Buffer
	n        int
	firstKey string
	offset   int64
	wroteHdr bool
}

func newZipNumWriter(cdx, idx io.Writer, filename string, linesPerBlock int, finalNewline bool, st idxStyle) *zipNumWriter {
	if linesPerBlock <= 0 {
		linesPerBlock = DefaultLinesPerBlock
	}
	if st.keys == nil {
		st.keys = []string{"offset", "length", "digest", "filename"}
		st.colon, st.comma = ":", ","
	}
	if st.meta == nil {
		st.meta = []byte(`!meta 0 {"format":"cdxj-gzip-1.0","filename":` + string(jsonString(filename)) + `}`)
	}
	return &zipNumWriter{cdx: cdx, idx: idx, filename: filename, linesPerBlock: linesPerBlock, finalNewline: finalNewline, style: st}
}

// DefaultLinesPerBlock is the lines per ZipNum block of py-wacz and the
// Browsertrix crawler.
const DefaultLinesPerBlock = 256

func (w *zipNumWriter) writeLine(l []byte) error {
	if !w.wroteHdr {
		w.wroteHdr = true
		if _, err := w.idx.Write(append(bytes.Clone(w.style.meta), '\n')); err != nil {
			return err
		}
	}
	if w.n == 0 {
		w.firstKey = lineKey(l)
		w.comp.Reset()
		w.bw.Start(&w.comp)
	}
	if err := w.bw.Line(l); err != nil {
		return err
	}
	w.n++
	if w.n == w.linesPerBlock {
		return w.flush()
	}
	return nil
}

func (w *zipNumWriter) flush() error {
	if w.n == 0 {
		return nil
	}
	if err := w.bw.End(w.finalNewline); err != nil {
		return err
	}
	sum := sha256.Sum256(w.comp.Bytes())
	var js bytes.Buffer
	js.WriteByte('{')
	for i, k := range w.style.keys {
		if i > 0 {
			js.WriteString(w.style.comma)
		}
		js.Write(jsonString(k))
		js.WriteString(w.style.colon)
		switch k {
		case "offset":
			js.WriteString(strconv.FormatInt(w.offset, 10))
		case "length":
			js.WriteString(strconv.Itoa(w.comp.Len()))
		case "digest":
			js.Write(jsonString("sha256:" + hex.EncodeToString(sum[:])))
		case "filename":
			js.Write(jsonString(w.filename))
		default:
			return fmt.Errorf("%w: cannot write the .idx field %q", ErrIndex, k)
		}
	}
	js.WriteByte('}')
	if _, err := fmt.Fprintf(w.idx, "%s %s\n", w.firstKey, js.Bytes()); err != nil {
		return err
	}
	if _, err := w.cdx.Write(w.comp.Bytes()); err != nil {
		return err
	}
	w.offset += int64(w.comp.Len())
	w.n = 0
	return nil
}

func (w *zipNumWriter) close() error {
	if !w.wroteHdr {
		w.wroteHdr = true
		if _, err := w.idx.Write(append(bytes.Clone(w.style.meta), '\n')); err != nil {
			return err
		}
	}
	return w.flush()
}

// newGzipBlockReader reads one gzip member of r.
func newGzipBlockReader(r io.Reader) (*gzip.Reader, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	zr.Multistream(false)
	return zr, nil
}
