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
// writer's Log.Move, a Moves' Follow and Live, and a reader of another
// host's log (package cluster) all take their steps here.
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
func (b *Block) Add(e *Entry) {
	var shift int64
	if n := len(b.edits); n > 0 {
		shift = b.edits[n-1].shift()
	}
	b.edits = append(b.edits, edit{oldOff: e.OldOffset, oldLen: e.OldLength, newOff: e.OldOffset + shift, newLen: e.NewLength})
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

// Follow returns where the record that started at off before the
// replacement starts after it, or ErrRewritten if an entry rewrote it.
func (b Block) Follow(off int64) (int64, error) {
	moved, i, pos := b.step(off)
	switch pos {
	case at:
		return 0, ErrRewritten
	case inside:
		return 0, fmt.Errorf("offset %d is inside the record at %d that a run rewrote", off, b.edits[i].oldOff)
	}
	return moved, nil
}
