package reindex

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/klauspost/compress/gzip"

	"warcdedup/cdx"
	"warcdedup/rewritelog"
)

// InPlace brings an index up to date with a rewrite log where it is, all
// or nothing: every line updated as Updater does, a sorted index kept
// sorted (lines whose cdx.Line.Fixed parts are equal, and were in order,
// sorted again after their edits: what sorting the updated lines afresh
// gives), a gzip file gzip again, a ZipNum's blocks rewritten with the
// lines each had (a block no line of which changed is copied byte for byte)
// and its summary with them, spelt as it was (cdx.Block.AppendTo). Any
// problem (a line that cannot be read or updated, a line of a file not
// Known, a log entry without its line, a summary that does not match its
// blocks) leaves the index untouched. The new files replace the old ones
// as replace.go says.
type InPlace struct {
	Updater
	// Options are the cdx.Reader's.
	Options cdx.Options
	// Known, when set, tells the files the index may name: a line of any
	// other file is a problem (the index is not the collection's).
	Known func(file []byte) bool
	// Report is called for each problem.
	Report func(error)
	// Note is kept in the journal of a replacement of several files
	// (FinishPending returns it).
	Note string
	// MaxGroup bounds the bytes of the lines with equal fixed parts held
	// to sort them again; 0 is 64 MiB.
	MaxGroup int
	// BeforeCommit, when set, is called with the files that will replace
	// the index's (their size and SHA-256, the summary last), written and
	// synced, before any is renamed; an error leaves the index untouched.
	BeforeCommit func([]FileSum) error

	// What was done.
	Problems                int64
	Blocks, BlocksRewritten int64
	Written                 []FileSum
	firstProblem            error
}

// RefusedError is an update that left the index untouched because of the
// index: problems with its lines (Problems of them, the first First), or
// one that stopped the update (First: a summary that does not match its
// blocks, a form that cannot be kept).
type RefusedError struct {
	Index    string
	Problems int64
	First    error
}

func (e *RefusedError) Error() string {
	if e.Problems == 0 {
		return fmt.Sprintf("%s: left untouched: %v", e.Index, e.First)
	}
	return fmt.Sprintf("%s: left untouched: %d problems, the first: %v", e.Index, e.Problems, e.First)
}
func (e *RefusedError) Unwrap() error { return e.First }

// Changed is the number of lines the update changed.
func (p *InPlace) Changed() int64 { return p.Stats.Moved + p.Stats.Revisits + p.Stats.Restored }

func (p *InPlace) problem(err error) {
	p.Problems++
	if p.firstProblem == nil {
		p.firstProblem = err
	}
	if p.Report != nil {
		p.Report(err)
	}
}

// Rewrite reads the index src (a copy of dst kept from before, or dst
// itself) and replaces dst's files with its lines updated.
func (p *InPlace) Rewrite(src, dst *Index) error {
	if src.Form != dst.Form || len(src.Parts) != len(dst.Parts) {
		return fmt.Errorf("reindex: %s (%s) is no copy of %s (%s)", src.Path, src.Form, dst.Path, dst.Form)
	}
	var lp *logPass
	if p.Log != nil {
		var err error
		if lp, err = p.startLog(context.Background()); err != nil {
			return err
		}
		defer lp.close()
		if err := lp.planned(p.plan(src, dst)); err != nil {
			return err
		}
	}
	r := &replacement{index: dst.Path, note: p.Note, before: p.BeforeCommit}
	var err error
	if src.Form == ZipNum {
		err = p.zipnum(src, dst, r)
	} else {
		err = p.file(src, dst, r)
	}
	unmatched := func(f *rewritelog.File, mv rewritelog.Move) {
		p.problem(&UnmatchedError{File: f.Name, Move: mv})
	}
	switch {
	case lp != nil:
		if err = lp.applied(err); err == nil {
			err = lp.eachUnmatched(unmatched)
		}
	case err == nil:
		p.Moves.Unmatched(unmatched)
	}
	if err == nil && p.Problems > 0 {
		err = &RefusedError{Index: dst.Path, Problems: p.Problems, First: p.firstProblem}
	}
	if err != nil {
		r.abort()
		var re *RefusedError
		if !errors.As(err, &re) && !isIOError(err) {
			err = &RefusedError{Index: dst.Path, First: err}
		}
		return err
	}
	p.Written, err = r.commit()
	return err
}

// isIOError tells a failure of the machine (a file that cannot be read or
// written, a full disk) from a problem of the index.
func isIOError(err error) bool {
	var pe *os.PathError
	var le *os.LinkError
	return errors.As(err, &pe) || errors.As(err, &le)
}

// lineTag is where a line was: its block (0 outside a ZipNum) and place in it.
type lineTag struct {
	block int
	pos   int64
}

// unknown tells a record line of a file that is not Known.
func (p *InPlace) unknown(l *cdx.Line) bool {
	return l.Kind == cdx.Record && p.Known != nil && l.Filename != nil && !p.Known(l.Filename)
}

// take updates a line read from input (lerr: why it could not be read)
// and hands it to s.
func (p *InPlace) take(l *cdx.Line, lerr error, input string, tag lineTag, s *sorter) error {
	edited := false
	switch {
	case lerr != nil:
		p.Stats.Lines++
		p.problem(lerr)
	case p.unknown(l):
		p.Stats.Lines++
		p.problem(&LineError{Input: input, Line: l.Number,
			Err: fmt.Errorf("names the file %q, which is no file of the collection: an index of other files?", l.Filename)})
	default:
		changed, err := p.Updater.Update(l, input)
		if err != nil {
			p.problem(err)
		}
		edited = changed
	}
	return s.add(l, tag, edited)
}

// file rewrites a plain or gzip index.
func (p *InPlace) file(src, dst *Index, r *replacement) error {
	in, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer in.Close()
	rd, err := cdx.NewReader(in, dst.Path, p.Options)
	if err != nil {
		return err
	}
	nf, err := r.create(dst.Path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(nf, 256<<10)
	var w io.Writer = bw
	var zw *gzip.Writer
	if dst.Form == Gzip {
		zw = gzip.NewWriter(bw)
		w = zw
	}
	s := &sorter{max: p.MaxGroup, emit: func(out []byte, _ lineTag, _ bool) error {
		if _, err := w.Write(out); err != nil {
			return err
		}
		_, err := w.Write([]byte{'\n'})
		return err
	}}
	for {
		l, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if le := (*cdx.LineError)(nil); !errors.As(err, &le) {
				return err
			}
		}
		if err := p.take(l, err, dst.Path, lineTag{}, s); err != nil {
			return err
		}
	}
	if err := s.finish(dst.Path); err != nil {
		return err
	}
	if n := rd.Members(); n > 1 {
		return fmt.Errorf("%s: gzip of %d members, as a ZipNum's block file is, and no ZipNum summary (.idx, .summary) beside it names it: rewriting it as one member would leave any summary of it wrong; give the summary instead, or, if it is no ZipNum, make it one member (zcat %s | gzip > NEW) and give that", dst.Path, n, dst.Path)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// zipnum rewrites a ZipNum: its lines block by block through the sorter
// into blocks of the same number of lines.
func (p *InPlace) zipnum(src, dst *Index, r *replacement) error {
	bs, err := openBlocks(src, dst)
	if err != nil {
		return err
	}
	defer bs.close()
	out := &zipnumOut{p: p, r: r, dst: dst, bs: bs}
	idx, err := r.create(dst.Path)
	if err != nil {
		return err
	}
	out.idx = bufio.NewWriter(idx)
	s := &sorter{max: p.MaxGroup, emit: out.line}
	zl := &zipnumLines{bs: bs, opts: p.Options}
	for j := 0; ; j++ {
		ob := out.newBlock(j)
		b, br, err := zl.block(&ob.raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		ob.b, ob.part = b, bs.part
		out.pending = append(out.pending, ob)
		for pos := int64(0); ; pos++ {
			l, err := zl.line()
			if err == io.EOF {
				break
			}
			if l == nil {
				return err
			}
			if pos == 0 {
				ob.origFirst = append(ob.origFirst[:0], l.Raw...)
				if !bytes.HasPrefix(l.Raw, b.Key) {
					return &cdx.IdxError{Name: src.Path, Line: b.Number,
						Err: fmt.Errorf("key %q does not start its block's first line %q: the summary does not match its blocks", b.Key, l.Raw)}
				}
			}
			if err := p.take(l, err, bs.path, lineTag{j, pos}, s); err != nil {
				return err
			}
		}
		ob.lines, ob.newline = br.Lines(), br.EndsWithNewline()
		if err := out.finishFull(); err != nil {
			return err
		}
	}
	if err := s.finish(dst.Path); err != nil {
		return err
	}
	if err := out.finishFull(); err != nil {
		return err
	}
	if len(out.pending) > 0 {
		return fmt.Errorf("reindex: %s: %d blocks left without their lines", dst.Path, len(out.pending))
	}
	return out.close()
}

// zipnumLines reads a ZipNum's lines, block by block.
type zipnumLines struct {
	bs   *blocks
	opts cdx.Options
	rd   *cdx.Reader
	part string
}

// block starts the next block (its bytes to raw, if not nil): its
// summary line and the reader of its lines; io.EOF after the last.
func (z *zipnumLines) block(raw *bytes.Buffer) (*cdx.Block, *cdx.BlockReader, error) {
	z.bs.raw = raw
	b, br, err := z.bs.next()
	if err != nil {
		return nil, nil, err
	}
	if z.rd == nil || z.bs.part != z.part {
		if z.rd != nil && z.rd.Layout() != nil && z.opts.Layout == nil {
			z.opts.Layout = z.rd.Layout()
		}
		if z.rd, err = cdx.NewReader(bytes.NewReader(nil), z.bs.path, z.opts); err != nil {
			return nil, nil, err
		}
		z.part = z.bs.part
	}
	z.rd.Continue(br)
	return b, br, nil
}

// line returns the block's next line, with a *cdx.LineError if it cannot
// be read; io.EOF at the block's end; no line with any other error (a
// *cdx.BlockError names file and offset).
func (z *zipnumLines) line() (*cdx.Line, error) {
	l, err := z.rd.Next()
	if err == nil || err == io.EOF {
		return l, err
	}
	if be := (*cdx.BlockError)(nil); errors.As(err, &be) {
		return nil, be
	}
	if le := (*cdx.LineError)(nil); !errors.As(err, &le) {
		return nil, err
	}
	return l, err
}

// plan reads the index src as file and zipnum do, and has Update follow
// each line they would have it update (stream.go).
func (p *InPlace) plan(src, dst *Index) error {
	update := func(l *cdx.Line, lerr error, input string) {
		if lerr == nil && !p.unknown(l) {
			p.Updater.Update(l, input)
		}
	}
	if src.Form != ZipNum {
		in, err := os.Open(src.Path)
		if err != nil {
			return err
		}
		defer in.Close()
		rd, err := cdx.NewReader(in, dst.Path, p.Options)
		if err != nil {
			return err
		}
		for {
			l, err := rd.Next()
			switch {
			case err == io.EOF:
				return nil
			case err != nil && !errors.As(err, new(*cdx.LineError)):
				return err
			}
			update(l, err, dst.Path)
		}
	}
	bs, err := openBlocks(src, dst)
	if err != nil {
		return err
	}
	defer bs.close()
	zl := &zipnumLines{bs: bs, opts: p.Options}
	for {
		if _, _, err := zl.block(nil); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		for {
			l, err := zl.line()
			if err == io.EOF {
				break
			}
			if l == nil {
				return err
			}
			update(l, err, bs.path)
		}
	}
}

// maxBlockText bounds the inflated lines of a block held to write it.
const maxBlockText = 256 << 20

// outBlock is a block being written: its lines as updated, the block as
// read.
type outBlock struct {
	b         *cdx.Block
	index     int
	part      string
	lines     int64 // as read; -1 until the block is read
	newline   bool  // its last line ended with "\n"
	raw       bytes.Buffer
	origFirst []byte
	text      bytes.Buffer // the lines as written, each with "\n"
	got       int64
	unchanged bool // every line as read, in its place
}

func (ob *outBlock) full() bool { return ob.lines >= 0 && ob.got == ob.lines }

// zipnumOut writes a ZipNum's blocks and summary.
type zipnumOut struct {
	p        *InPlace
	r        *replacement
	dst      *Index
	bs       *blocks
	idx      *bufio.Writer
	metaDone bool
	pending  []*outBlock
	part     string
	partW    *bufio.Writer
	offset   int64
	bw       cdx.BlockWriter
	comp     bytes.Buffer
	buf      []byte
	free     []*outBlock // written, their buffers to use again
}

// newBlock returns an empty outBlock for the block numbered index.
func (z *zipnumOut) newBlock(index int) *outBlock {
	ob := &outBlock{}
	if n := len(z.free); n > 0 {
		ob = z.free[n-1]
		z.free = z.free[:n-1]
	}
	raw, text, first := ob.raw, ob.text, ob.origFirst[:0]
	raw.Reset()
	text.Reset()
	*ob = outBlock{index: index, lines: -1, unchanged: true, raw: raw, text: text, origFirst: first}
	return ob
}

// line adds a line to the first block that has room for it.
func (z *zipnumOut) line(out []byte, tag lineTag, edited bool) error {
	var ob *outBlock
	for _, b := range z.pending {
		if !b.full() {
			ob = b
			break
		}
	}
	if ob == nil {
		return fmt.Errorf("reindex: %s: more lines than its blocks had", z.dst.Path)
	}
	ob.text.Write(out)
	ob.text.WriteByte('\n')
	if ob.text.Len() > maxBlockText {
		path, _ := z.dst.part(ob.part)
		return &cdx.BlockError{File: path, Offset: ob.b.Offset, Idx: z.dst.Path, Line: ob.b.Number,
			Err: fmt.Errorf("more than %d bytes of lines in one block", maxBlockText)}
	}
	ob.unchanged = ob.unchanged && !edited && tag == lineTag{ob.index, ob.got}
	ob.got++
	return z.finishFull()
}

// finishFull writes the blocks at the head of the queue that have all
// their lines.
func (z *zipnumOut) finishFull() error {
	for len(z.pending) > 0 && z.pending[0].full() {
		if err := z.write(z.pending[0]); err != nil {
			return err
		}
		z.free = append(z.free, z.pending[0])
		z.pending[0] = nil
		z.pending = z.pending[1:]
	}
	return nil
}

// write writes a block and its summary line.
func (z *zipnumOut) write(ob *outBlock) error {
	data := ob.raw.Bytes()
	text := ob.text.Bytes()
	if !ob.unchanged {
		z.comp.Reset()
		z.bw.Start(&z.comp)
		if err := z.bw.Line(text[:len(text)-1]); err != nil {
			return err
		}
		if err := z.bw.End(ob.newline); err != nil {
			return err
		}
		data = z.comp.Bytes()
		z.p.BlocksRewritten++
	}
	if ob.part != z.part {
		if err := z.closePart(); err != nil {
			return err
		}
		path, ok := z.dst.part(ob.part)
		if !ok {
			return fmt.Errorf("reindex: %s: no block file %q", z.dst.Path, ob.part)
		}
		nf, err := z.r.create(path)
		if err != nil {
			return err
		}
		z.part, z.partW, z.offset = ob.part, bufio.NewWriterSize(nf, 256<<10), 0
	}
	if _, err := z.partW.Write(data); err != nil {
		return err
	}
	first, _, _ := bytes.Cut(text, []byte("\n"))
	key := ob.b.Key
	switch {
	case bytes.HasPrefix(first, key):
	case bytes.Equal(key, bytes.TrimRight(ob.origFirst, " \r")):
		// The key was the whole first line (cdxj-indexer's key of a CDX
		// line): it is the new one.
		key = bytes.TrimRight(first, " \r")
	default:
		return &cdx.IdxError{Name: z.dst.Path, Line: ob.b.Number,
			Err: fmt.Errorf("its key %q would not start its block's first line %q after the update", key, first)}
	}
	digest := ""
	if ob.b.Digest != "" {
		sum := sha256.Sum256(data)
		digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	if err := z.meta(); err != nil {
		return err
	}
	z.buf = append(ob.b.AppendTo(z.buf[:0], key, z.offset, int64(len(data)), digest), '\n')
	if _, err := z.idx.Write(z.buf); err != nil {
		return err
	}
	z.offset += int64(len(data))
	z.p.Blocks++
	return nil
}

// meta writes the summary's "!meta" line as read, before its first block.
func (z *zipnumOut) meta() error {
	if z.metaDone {
		return nil
	}
	z.metaDone = true
	if m := z.bs.ir.Meta; m != nil {
		_, err := z.idx.Write(append(bytes.Clone(m.Raw), '\n'))
		return err
	}
	return nil
}

func (z *zipnumOut) closePart() error {
	if z.partW == nil {
		return nil
	}
	err := z.partW.Flush()
	z.partW = nil
	return err
}

func (z *zipnumOut) close() error {
	if err := z.meta(); err != nil {
		return err
	}
	if err := z.closePart(); err != nil {
		return err
	}
	return z.idx.Flush()
}

// sorter passes lines on in their order, except that a run of record
// lines with equal fixed parts that was in order is sorted again after
// the update; it checks that an index that was sorted stays sorted.
type sorter struct {
	emit  func(out []byte, tag lineTag, edited bool) error
	max   int
	group []held
	arena []byte
	// prefix is the group's fixed part; inOrder: its lines as read were
	// in order.
	prefix  []byte
	inOrder bool
	prevIn  []byte
	havePre bool
	// Of the whole index: sorted as read, and as written.
	unsortedIn, unsortedOut bool
	prevOut                 []byte
	haveOut                 bool
	lines                   int64
	firstDisorder           int64
}

type held struct {
	start, end int
	tag        lineTag
	edited     bool
	number     int64
}

func (s *sorter) add(l *cdx.Line, tag lineTag, edited bool) error {
	s.lines++
	if l.Kind != cdx.Record {
		if err := s.flush(); err != nil {
			return err
		}
		return s.emit(l.Raw, tag, false)
	}
	fixed := l.Fixed()
	if len(s.group) > 0 && !bytes.Equal(fixed, s.prefix) {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if s.havePre && bytes.Compare(l.Raw, s.prevIn) < 0 {
		s.unsortedIn = true
		s.inOrder = false
	}
	if len(s.group) == 0 {
		s.prefix = append(s.prefix[:0], fixed...)
		s.inOrder = true
	}
	s.prevIn, s.havePre = append(s.prevIn[:0], l.Raw...), true
	start := len(s.arena)
	if edited {
		s.arena = l.AppendTo(s.arena)
	} else {
		s.arena = append(s.arena, l.Raw...)
	}
	s.group = append(s.group, held{start: start, end: len(s.arena), tag: tag, edited: edited, number: l.Number})
	limit := s.max
	if limit <= 0 {
		limit = 64 << 20
	}
	if len(s.arena) > limit {
		return fmt.Errorf("line %d: more than %d bytes of lines begin with %q: too many to keep their order in memory", l.Number, limit, s.prefix)
	}
	return nil
}

func (s *sorter) flush() error {
	if len(s.group) > 1 && s.inOrder {
		slices.SortStableFunc(s.group, func(a, b held) int {
			return bytes.Compare(s.arena[a.start:a.end], s.arena[b.start:b.end])
		})
	}
	for _, h := range s.group {
		out := s.arena[h.start:h.end]
		if s.haveOut && bytes.Compare(out, s.prevOut) < 0 && !s.unsortedOut {
			s.unsortedOut, s.firstDisorder = true, h.number
		}
		s.prevOut, s.haveOut = append(s.prevOut[:0], out...), true
		if err := s.emit(out, h.tag, h.edited); err != nil {
			return err
		}
	}
	s.group, s.arena = s.group[:0], s.arena[:0]
	return nil
}

// finish passes the last lines on; an index that was sorted and would not
// stay so is an error.
func (s *sorter) finish(name string) error {
	if err := s.flush(); err != nil {
		return err
	}
	if !s.unsortedIn && s.unsortedOut {
		return fmt.Errorf("%s: line %d: the index is sorted and would not stay sorted after the update", name, s.firstDisorder)
	}
	return nil
}
