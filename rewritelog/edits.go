package rewritelog

import (
	"encoding/binary"
	"os"
	"sort"
	"sync"
)

// editStore keeps the edits of the log's blocks (32 bytes an entry) in an
// unlinked temporary file beside the log, so that Move through a block
// that has fallen out of its cache reads a few entries there instead of
// parsing the block again from its text. At 10^7 records a run's blocks
// outgrow any cache of a fixed budget, and the originals of the
// duplicates lie in any of the files replaced before: parsing a block
// again for each of them (its entries' digests, dates and member
// descriptions, only to take four numbers) made the rewrite's time per
// record grow with the log.
//
// In memory it keeps, for each block, where its edits are and every
// sampleEvery-th entry's old offset (1/16 of a byte an entry), so that a
// Move reads one stretch of at most sampleEvery entries (4 kB).
//
// It is a cache: a block it does not hold (not put yet, or its write
// failed) is parsed from the log as before, and put then.
type editStore struct {
	f *os.File

	mu     sync.Mutex
	end    int64
	blocks map[int64]storedBlock // by the offset of the block's entries in the log
	failed bool                  // a write failed: nothing more is put
}

// storedBlock is where a block's edits are in the store's file.
type storedBlock struct {
	base    int64
	n       int
	samples []int64 // the old offset of entries 0, sampleEvery, 2*sampleEvery...
}

const (
	editSize    = 32
	sampleEvery = 128
)

// newEditStore makes the store in dir, or returns nil (no store: every
// block is parsed from the log) where no file can be made there.
func newEditStore(dir string) *editStore {
	f, err := os.CreateTemp(dir, ".rewrite-edits-*")
	if err != nil {
		return nil
	}
	// Unlinked at once: its space comes back when it is closed, or when
	// the process ends however it ends.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil
	}
	return &editStore{f: f, blocks: map[int64]storedBlock{}}
}

// put keeps the edits of the block whose entries start at byte at of the
// log.
func (s *editStore) put(at int64, b Block) {
	if s == nil || len(b.edits) == 0 {
		return
	}
	buf := make([]byte, editSize*len(b.edits))
	samples := make([]int64, 0, (len(b.edits)+sampleEvery-1)/sampleEvery)
	for i, e := range b.edits {
		encodeEdit(buf[editSize*i:], e)
		if i%sampleEvery == 0 {
			samples = append(samples, e.oldOff)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.blocks[at]; ok || s.failed {
		return
	}
	if _, err := s.f.WriteAt(buf, s.end); err != nil {
		s.failed = true
		return
	}
	s.blocks[at] = storedBlock{base: s.end, n: len(b.edits), samples: samples}
	s.end += int64(len(buf))
}

// follow moves off through the block at byte at of the log, as that
// Block's Follow does, from the one stretch of entries that holds the last
// entry at or before off. False if the store does not hold the block.
func (s *editStore) follow(at int64, off int64) (int64, bool, error) {
	if s == nil {
		return 0, false, nil
	}
	s.mu.Lock()
	sb, ok := s.blocks[at]
	s.mu.Unlock()
	if !ok {
		return 0, false, nil
	}
	k := sort.Search(len(sb.samples), func(i int) bool { return sb.samples[i] > off }) - 1
	if k < 0 {
		return off, true, nil // before the block's first entry: not moved
	}
	first := k * sampleEvery
	n := min(sampleEvery, sb.n-first)
	var stretch [editSize * sampleEvery]byte
	buf := stretch[:editSize*n]
	if _, err := s.f.ReadAt(buf, sb.base+int64(editSize*first)); err != nil {
		return 0, false, nil
	}
	// The last entry of the stretch at or before off (the first is).
	i := sort.Search(n, func(i int) bool { return int64(binary.LittleEndian.Uint64(buf[editSize*i:])) > off }) - 1
	moved, err := Block{edits: []edit{decodeEdit(buf[editSize*i:])}}.Follow(off)
	return moved, true, err
}

func encodeEdit(p []byte, e edit) {
	binary.LittleEndian.PutUint64(p[0:], uint64(e.oldOff))
	binary.LittleEndian.PutUint64(p[8:], uint64(e.oldLen))
	binary.LittleEndian.PutUint64(p[16:], uint64(e.newOff))
	binary.LittleEndian.PutUint64(p[24:], uint64(e.newLen))
}

func decodeEdit(p []byte) edit {
	return edit{oldOff: int64(binary.LittleEndian.Uint64(p[0:])), oldLen: int64(binary.LittleEndian.Uint64(p[8:])),
		newOff: int64(binary.LittleEndian.Uint64(p[16:])), newLen: int64(binary.LittleEndian.Uint64(p[24:]))}
}

func (s *editStore) close() {
	if s != nil {
		s.f.Close()
	}
}
