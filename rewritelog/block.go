package rewritelog

import (
	"errors"
	"fmt"
)

// ErrRewritten says that the record at an offset is one a run rewrote.
var ErrRewritten = errors.New("a run rewrote the record there")

// Block is one replacement of a file as far as the offsets in it go: the
// records its entries rewrote, in increasing old offset, each with its
// old and new place. An offset in the file before the replacement is
// followed through it by Follow; through several replacements, one
// Block after the other. It is the one follower of the package: the
// writer's Log.Move, a Moves' Follow and Live, and a Tail's Where (a
// reader of another host's log) all take their steps here.
type Block struct {
	edits []edit
}

// edit is where one entry put its record.
type edit struct {
	oldOff, oldLen, newOff, newLen int64
}

// shift is what the records after e's moved by: what the file grew by
// (shrank, negative) up to e's end.
func (e *edit) shift() int64 { return e.newOff + e.newLen - e.oldOff - e.oldLen }

// NewBlock returns the Block of a replacement's entries, which must be in
// increasing old offset (as a block of the log has them).
func NewBlock(entries []Entry) Block {
	b := Block{edits: make([]edit, 0, len(entries))}
	for i := range entries {
		b.Add(&entries[i])
	}
	return b
}

// Add appends an entry, which must come after the others. Its new offset
// is where the entries before it put it (what a log read back has, and
// what the Reader checks).
func (b *Block) Add(e *Entry) { b.add(e.OldOffset, e.OldLength, e.NewLength) }

func (b *Block) add(oldOff, oldLen, newLen int64) {
	var shift int64
	if n := len(b.edits); n > 0 {
		shift = b.edits[n-1].shift()
	}
	b.edits = append(b.edits, edit{oldOff: oldOff, oldLen: oldLen, newOff: oldOff + shift, newLen: newLen})
}

// Len is the number of entries.
func (b Block) Len() int { return len(b.edits) }

// Saved is what the entries shortened the file by (negative: lengthened):
// its old size less its new one, if no entry is missing.
func (b Block) Saved() int64 {
	if len(b.edits) == 0 {
		return 0
	}
	return -b.edits[len(b.edits)-1].shift()
}

// position is where an offset stands against an entry's record.
type position uint8

const (
	before position = iota // before every entry's record: it does not move
	at                     // at the start of the record: the entry rewrote it
	inside                 // inside the record, not at its start
	after                  // after the record (and before the next one's start)
)

// step finds the offset off among the block's records: i is the last
// entry whose old offset is off or before it (-1 if none) and pos where
// off stands against it; moved is where off stands after the block for
// before and after (for at, the entry's new offset).
func (b Block) step(off int64) (moved int64, i int, pos position) {
	lo, hi := 0, len(b.edits)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if b.edits[mid].oldOff <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	i = lo - 1
	if i < 0 {
		return off, i, before
	}
	e := &b.edits[i]
	switch {
	case e.oldOff == off:
		return e.newOff, i, at
	case off < e.oldOff+e.oldLen:
		return off, i, inside
	}
	return off + e.shift(), i, after
}

// fault is why a record cannot be followed through a block.
type fault uint8

const (
	noFault   fault = iota
	inRecord        // the offset falls inside an entry's record
	coverHead       // the range holds an entry's start without being its record
)

// land follows the record that started at off, length bytes long (0 or
// less: unknown), through the block: moved is where it starts after it,
// and i the entry that rewrote it (-1: none), for a fault the entry at
// fault. An entry rewrote the record if it starts at off, or if it
// starts inside the range and ends where the range ends (up to 4 bytes
// before: an indexer may leave out the CRLF CRLF after a record), the
// only one to start there; the record then moves as the records before
// it (warcio.js gives the record after a dns: response in
// NetarchiveSuite's WARC files the dns: record's offset and the length
// of both).
func (b Block) land(off, length int64) (moved int64, i int, f fault) {
	moved, i, pos := b.step(off)
	switch pos {
	case at:
		return moved, i, noFault
	case inside:
		return off, i, inRecord
	}
	j := i + 1
	if length <= 0 || j >= len(b.edits) || b.edits[j].oldOff >= off+length {
		return moved, -1, noFault
	}
	e := &b.edits[j]
	if end := e.oldOff + e.oldLen; end < off+length || end > off+length+4 || j+1 < len(b.edits) && b.edits[j+1].oldOff < off+length {
		return off, j, coverHead
	}
	return moved, j, noFault
}

// Follow returns where the record that started at off before the
// replacement starts after it, or ErrRewritten if an entry rewrote it.
func (b Block) Follow(off int64) (int64, error) {
	moved, i, f := b.land(off, -1)
	switch {
	case f == inRecord:
		return 0, fmt.Errorf("offset %d is inside the record at %d that a run rewrote", off, b.edits[i].oldOff)
	case i >= 0:
		return 0, ErrRewritten
	}
	return moved, nil
}
