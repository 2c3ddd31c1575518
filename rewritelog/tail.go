package rewritelog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// Tail is a log that another process appends to, read as it grows: how a
// reader on one host follows the records of another host's files through
// the replacements that host's rewrite logs (package cluster, whose hosts
// share the work directory the logs are in). Where answers "where is the
// record at offset X of file F, as F was when the log had a given size,
// now?".
//
// A Tail keeps where each block is in the log, not its entries, so that
// memory grows with the replacements of the files named (a few tens of
// bytes each), not with the log: a record is followed through a block by
// a binary search of the block's lines in the log (a block's entries are
// in increasing old offset, and each line gives where its record went),
// reading a few kilobytes of the log, not the block (at 10^8 entries a
// log holds gigabytes). It takes in whole blocks only: a block still
// being written is taken in by a later read, once its entries account for
// its file's change of size. A block that another line follows and that is
// not whole never will be (entries are missing): its file's offsets cannot
// be followed through it, and Where says so.
//
// The log is opened again for each read (Where, Size): a reader on another
// host sees what was appended since only on opening it (the close-to-open
// consistency of NFS), and the log need not exist yet (nothing replaced so
// far). A Tail is safe for concurrent use.
type Tail struct {
	name  string
	since int64

	mu     sync.Mutex
	read   int64 // bytes of the log taken in
	blocks map[string][]tailBlock
	// followed counts the bytes of the log read to follow records.
	followed int64
	// What a follow reuses: the window of the log read, its entries,
	// an unescaped file name.
	window    []byte
	edits     []edit
	unescaped []byte
}

// tailBlock is one replacement of a file: its size before and after, and
// where its entries' lines are in the log.
type tailBlock struct {
	oldSize, newSize int64
	entries, end     int64 // the first entry's line, and the line after the last
	// incomplete: its entries do not account for its change of size.
	incomplete bool
}

// tailWindow is the most bytes of a block's lines read whole to follow a
// record: the binary search narrows the block to this first.
const tailWindow = 8 << 10

// tailLine is the longest line a Tail reads.
const tailLine = 64 << 10

// NewTail returns a Tail of the log file name that takes in the blocks
// from byte offset since on: those of the replacements after the log had
// that size (when the offsets to follow were taken).
func NewTail(name string, since int64) *Tail {
	return &Tail{name: name, since: since, read: since, blocks: map[string][]tailBlock{}}
}

// Where returns the size of the latest version of file (relative,
// unescaped) that the log names, size0 if it names none, and where the
// record at offset off of the version of size0 (the file as it was when
// the log had the Tail's since bytes) stands in it. A record that a
// replacement rewrote is ErrRewritten; an offset inside one, or in a file
// whose replacement has entries missing, an error. The log is read again
// first.
func (t *Tail) Where(file string, size0, off int64) (size, at int64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, end, err := t.open()
	if f == nil || err != nil {
		return size0, off, err
	}
	defer f.Close()
	if err := t.refresh(f, end); err != nil {
		return 0, 0, err
	}
	size, at = size0, off
	for _, b := range t.blocks[file] {
		if b.incomplete {
			return 0, 0, fmt.Errorf("%s: the entries of %s's replacement at byte %d account for less than its change from %d to %d bytes: entries are missing, and offsets in the file cannot be followed",
				t.name, file, b.entries, b.oldSize, b.newSize)
		}
		if at, err = t.follow(f, b, at); err != nil {
			return 0, 0, err
		}
		size = b.newSize
	}
	return size, at, nil
}

// Size returns the size of the latest version of file (relative,
// unescaped) that the log names, size0 if it names none. The log is read
// again first.
func (t *Tail) Size(file string, size0 int64) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, end, err := t.open()
	if f == nil || err != nil {
		return size0, err
	}
	defer f.Close()
	if err := t.refresh(f, end); err != nil {
		return 0, err
	}
	if bs := t.blocks[file]; len(bs) > 0 {
		return bs[len(bs)-1].newSize, nil
	}
	return size0, nil
}

// open opens the log and returns its size, checking that it is no
// shorter than what was taken in (a log is never shortened: one that is
// has lost entries); a nil file if there is no log yet (and none was
// expected: since is 0).
func (t *Tail) open() (*os.File, int64, error) {
	f, err := os.Open(t.name)
	if errors.Is(err, os.ErrNotExist) && t.read == 0 {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < t.read {
		err = fmt.Errorf("%s has %d bytes, and %d were read from it before: entries are lost", t.name, fi.Size(), t.read)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// follow returns where the record at off before the replacement b stands
// after it (Block.Follow). The block's lines are narrowed by a binary
// search on their old offsets to a window that starts with the last entry
// at or before off (or with the block's first), and the window's entries
// followed as a Block: its first entry's shift, which its line gives (new
// offset less old), is that of the entries before.
func (t *Tail) follow(src io.ReaderAt, b tailBlock, off int64) (int64, error) {
	lo, hi := b.entries, b.end // line starts; the entry sought is in [lo, hi)
	for hi-lo > tailWindow {
		s, line, err := t.lineAfter(src, lo+(hi-lo)/2, hi)
		if err != nil {
			return 0, err
		}
		if line == nil {
			break // a few long lines
		}
		e, err := ParseEntry(line)
		if err != nil {
			return 0, fmt.Errorf("%s: the line at byte %d: %w", t.name, s, err)
		}
		if e.OldOffset <= off {
			lo = s
		} else {
			hi = s
		}
	}
	t.window = slices.Grow(t.window[:0], int(hi-lo))[:hi-lo]
	if _, err := src.ReadAt(t.window, lo); err != nil {
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	t.followed += hi - lo
	// The window's entries as a Block, their four numbers taken from
	// each line (the text fields are checked, not kept).
	var (
		blk    = Block{edits: t.edits[:0]}
		fields [10][]byte
		shift  int64 // the first entry's, new offset less old
	)
	for line := range bytes.Lines(t.window) {
		if line = bytes.TrimSuffix(line, []byte("\n")); len(line) == 0 {
			continue
		}
		e, _, err := parseFields(line, &fields, &t.unescaped)
		if err != nil {
			return 0, fmt.Errorf("%s: in the lines from byte %d: %w", t.name, lo, err)
		}
		if len(blk.edits) == 0 {
			shift = e.newOff - e.oldOff
		}
		blk.add(e.oldOff, e.oldLen, e.newLen)
	}
	t.edits = blk.edits
	if len(blk.edits) == 0 || blk.edits[0].oldOff > off {
		return off, nil // before every record the block rewrote
	}
	moved, err := blk.Follow(off)
	if err != nil {
		return 0, err
	}
	return moved + shift, nil
}

// lineAfter returns the first line of the log that starts after byte at
// and before end, and where it starts; nil if none does.
func (t *Tail) lineAfter(src io.ReaderAt, at, end int64) (int64, []byte, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(src, at, end-at), 4<<10)
	s := at
	for {
		part, err := r.ReadSlice('\n')
		s += int64(len(part))
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			t.followed += s - at
			return 0, nil, nil // the line at at runs to end
		}
	}
	line, err := r.ReadBytes('\n')
	t.followed += s - at + int64(len(line))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: the line at byte %d is cut", t.name, s)
	}
	return s, line[:len(line)-1], nil
}

// refresh takes in the whole blocks the log, size bytes now, has gained,
// reading it from where the last refresh stopped, a line at a time: a "# file" line and
// its entries, whole when the entries account for the change of size (a
// rewrite's entries each shorten the file, so no part of a block does). A
// block still being written is left for the next refresh; one that another
// line follows has ended, whole or not (a block is written in one piece).
func (t *Tail) refresh(src io.ReaderAt, size int64) error {
	if size == t.read {
		return nil // nothing new
	}
	br := bufio.NewReaderSize(io.NewSectionReader(src, t.read, size-t.read), tailLine)
	var b *tailOpen
	pos := t.read // of the next line
	// take takes in the open block, if any, once it has ended.
	take := func() {
		if b == nil {
			return
		}
		b.incomplete = b.oldSize-b.saved != b.newSize
		b.end = pos
		if !b.dry {
			t.blocks[b.file] = append(t.blocks[b.file], b.tailBlock)
		}
		b = nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("%s: a line at byte %d longer than %d bytes", t.name, pos, br.Size())
		}
		if err != nil { // a line half written, or none
			break
		}
		end := pos + int64(len(line))
		line = line[:len(line)-1]
		switch {
		case len(line) > 0 && line[0] == '#':
			take()
			t.read = pos
			fx, ok, err := ParseFixity(line)
			if err != nil {
				return fmt.Errorf("%s: at byte %d: %w", t.name, pos, err)
			}
			if ok {
				b = &tailOpen{file: fx.File, dry: fx.NewSum == "-", tailBlock: tailBlock{oldSize: fx.OldSize, newSize: fx.NewSize, entries: end}}
			} else {
				t.read = end
			}
		case len(line) > 0:
			e, err := ParseEntry(line)
			if err != nil {
				return fmt.Errorf("%s: at byte %d: %w", t.name, pos, err)
			}
			if b == nil || e.File != b.file {
				return fmt.Errorf("%s: at byte %d: an entry of %s outside its file's block", t.name, pos, e.File)
			}
			b.saved += e.OldLength - e.NewLength
		default:
			if b == nil {
				t.read = end
			}
		}
		pos = end
	}
	if b != nil && b.oldSize-b.saved == b.newSize {
		// Whole: what follows it is the next block's, or none yet.
		take()
		t.read = pos
	}
	return nil
}

// tailOpen is a block being read by refresh.
type tailOpen struct {
	tailBlock
	file  string
	dry   bool  // a dry run's: it moves nothing
	saved int64 // by its entries so far
}
