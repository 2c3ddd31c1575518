package reindex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"warcdedup/cdx"
)

// blocks goes through a ZipNum's blocks in its summary's order and checks
// that the summary matches them: keys in order, each block file's blocks
// together, the first at offset 0, each where the one before it ends, each
// one gzip member of the length its line gives (and its digest), no byte
// of a block file outside a block.
type blocks struct {
	ix       *Index
	shown    *Index   // the names errors give (ix itself, or the index ix is a copy of)
	f        *os.File // the summary
	pf       *os.File // the current block file
	ir       *cdx.IdxReader
	part     string // the current block file's name
	path     string // its path as shown
	end      int64  // where its last block ended
	lastLine int64  // and that block's summary line
	done     map[string]bool
	prevKey  []byte
	prevLine int64
	// raw, when set, gets each block's bytes.
	raw *bytes.Buffer
	br  cdx.BlockReader
}

// openBlocks starts reading the blocks of ix, errors naming the files of
// shown (ix, or the index ix is a copy of).
func openBlocks(ix, shown *Index) (*blocks, error) {
	f, err := os.Open(ix.Path)
	if err != nil {
		return nil, err
	}
	return &blocks{ix: ix, shown: shown, f: f, ir: cdx.NewIdxReader(f, shown.Path), done: map[string]bool{}}, nil
}

func (bs *blocks) close() {
	bs.f.Close()
	if bs.pf != nil {
		bs.pf.Close()
		bs.pf = nil
	}
}

// next returns the next block and the reader of its lines, or io.EOF
// after the last.
func (bs *blocks) next() (*cdx.Block, *cdx.BlockReader, error) {
	b, err := bs.ir.Next()
	if err == io.EOF {
		if bs.part != "" {
			if err := bs.endPart(); err != nil {
				return nil, nil, err
			}
		}
		return nil, nil, io.EOF
	}
	if err != nil {
		return nil, nil, err
	}
	if bs.prevKey != nil && bytes.Compare(b.Key, bs.prevKey) < 0 {
		return nil, nil, &cdx.IdxError{Name: bs.shown.Path, Line: b.Number,
			Err: fmt.Errorf("key %q sorts before line %d's %q: a ZipNum summary is sorted", b.Key, bs.prevLine, bs.prevKey)}
	}
	bs.prevKey, bs.prevLine = append(bs.prevKey[:0], b.Key...), b.Number
	if name := partName(bs.ir, b, bs.shown.Path); name != bs.part {
		if bs.part != "" {
			if err := bs.endPart(); err != nil {
				return nil, nil, err
			}
		}
		if bs.done[name] {
			return nil, nil, &cdx.IdxError{Name: bs.shown.Path, Line: b.Number, Err: fmt.Errorf("a block of %s after blocks of another block file: a part's blocks are together", name)}
		}
		path, ok := bs.ix.part(name)
		shown, _ := bs.shown.part(name)
		if !ok || shown == "" {
			return nil, nil, &cdx.IdxError{Name: bs.shown.Path, Line: b.Number, Err: fmt.Errorf("block file %q unknown", name)}
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		if bs.pf != nil {
			bs.pf.Close()
		}
		bs.pf = f
		bs.part, bs.path, bs.end = name, shown, 0
		bs.done[name] = true
	}
	if b.Offset != bs.end {
		what := fmt.Sprintf("the block before it (line %d) ends at %d", bs.lastLine, bs.end)
		if bs.end == 0 {
			what = "the first block of a block file starts at 0"
		}
		return nil, nil, &cdx.BlockError{File: bs.path, Offset: b.Offset, Idx: bs.shown.Path, Line: b.Number,
			Err: fmt.Errorf("the summary puts a block here, but %s: the summary does not match its blocks", what)}
	}
	if bs.raw != nil {
		bs.raw.Reset()
	}
	// The block before is read: its reader's buffers serve again.
	if err := bs.br.Reset(bs.pf, bs.path, bs.shown.Path, b, bs.raw); err != nil {
		return nil, nil, err
	}
	bs.end, bs.lastLine = b.Offset+b.Length, b.Number
	return b, &bs.br, nil
}

// endPart checks that the block file ends with its last block.
func (bs *blocks) endPart() error {
	fi, err := bs.pf.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != bs.end {
		return &cdx.BlockError{File: bs.path, Offset: bs.end, Idx: bs.shown.Path, Line: bs.lastLine,
			Err: fmt.Errorf("%d bytes after the last block the summary gives (the file has %d): the summary does not match its blocks", fi.Size()-bs.end, fi.Size())}
	}
	return nil
}

// zipnumStream is a ZipNum's lines, block after block, read as one index.
type zipnumStream struct {
	bs      *blocks
	cur     *cdx.BlockReader
	newline bool
	err     error
}

// OpenZipNum returns the lines of the ZipNum ix, block after block in its
// summary's order, each block's last line ended with "\n", every block
// checked against the summary (a block that does not match fails the Read
// that reaches it).
func OpenZipNum(ix *Index) (io.ReadCloser, error) {
	if ix.Form != ZipNum {
		return nil, errors.New("reindex: OpenZipNum of a " + ix.Form.String() + " index")
	}
	bs, err := openBlocks(ix, ix)
	if err != nil {
		return nil, err
	}
	return &zipnumStream{bs: bs}, nil
}

func (z *zipnumStream) Read(p []byte) (int, error) {
	for {
		if z.err != nil {
			return 0, z.err
		}
		if z.newline {
			if len(p) == 0 {
				return 0, nil
			}
			p[0] = '\n'
			z.newline = false
			return 1, nil
		}
		if z.cur == nil {
			_, br, err := z.bs.next()
			if err != nil {
				z.err = err
				continue
			}
			z.cur = br
		}
		n, err := z.cur.Read(p)
		if err == io.EOF {
			z.newline = !z.cur.EndsWithNewline()
			z.cur = nil
			err = nil
		}
		if err != nil {
			z.err = err
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

func (z *zipnumStream) Close() error {
	z.bs.close()
	return nil
}
