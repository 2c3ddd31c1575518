package rewritelog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/lru"
)

// editsIntent is file i's replacement in a Move test: n records of 1000
// bytes each turned into revisits of 100+i bytes, every other record.
func editsIntent(i, n int) *Intent {
	name := fmt.Sprintf("f%03d.warc.gz", i)
	in := &Intent{Fixity: Fixity{File: name, OldSize: int64(2000 * n), OldSum: "blake3:" + fmt.Sprintf("%064x", i),
		NewSize: int64(2000*n - n*(900-i)), NewSum: "blake3:" + fmt.Sprintf("%064x", i+1)}}
	var shift int64
	for r := range n {
		off := int64(2000 * r)
		in.Entries = append(in.Entries, Entry{File: name, OldOffset: off, OldLength: 1000, NewOffset: off + shift, NewLength: int64(100 + i),
			Kind: Revisit, PayloadDigest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", RefersToURI: "http://example.com/", RefersTo: "2024-01-01T00:00:00Z"})
		shift -= int64(900 - i)
	}
	return in
}

// TestMoveWithoutCache follows offsets through a log whose blocks do not
// fit Move's cache (a run of 10^7 records): the answers are the entries'
// own, the blocks this run appended are never parsed from the log's
// text, and those of an earlier run once each, however often Move needs
// them.
func TestMoveWithoutCache(t *testing.T) {
	const files, records = 40, 50
	name := filepath.Join(t.TempDir(), "rewrite.log")
	want := func(i, r int) int64 { return int64(1000+2000*r) - int64(r+1)*int64(900-i) } // the record after the r-th revisit
	check := func(l *Log, rounds int) {
		t.Helper()
		l.cache = lru.New[int64, Block](0)
		for range rounds {
			for i := range files {
				for r := 0; r < records; r += 7 {
					got, err := l.Move(fmt.Sprintf("f%03d.warc.gz", i), int64(2000*r+1000))
					if err != nil {
						t.Fatal(err)
					}
					if got != want(i, r) {
						t.Fatalf("file %d, record after %d: moved to %d, want %d", i, r, got, want(i, r))
					}
				}
			}
		}
	}

	l, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if err := l.Append(editsIntent(i, records)); err != nil {
			t.Fatal(err)
		}
	}
	check(l, 3)
	if l.parsed != 0 {
		t.Errorf("this run's blocks: %d parsed from the log's text, want 0", l.parsed)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l, err = Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check(l, 3)
	if l.parsed != files {
		t.Errorf("an earlier run's blocks: %d parsed from the log's text in 3 rounds, want %d (each once)", l.parsed, files)
	}
}

// BenchmarkMoveWithoutCache is a Move whose block is out of the cache, as
// at 10^7 records (400 entries a block).
func BenchmarkMoveWithoutCache(b *testing.B) {
	const files, records = 100, 400
	name := filepath.Join(b.TempDir(), "rewrite.log")
	l, err := Open(name)
	if err != nil {
		b.Fatal(err)
	}
	for i := range files {
		if err := l.Append(editsIntent(i, records)); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	if l, err = Open(name); err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	l.cache = lru.New[int64, Block](0)
	if os.Getenv("REWRITELOG_BENCH_NO_EDITS") != "" { // the parse of the block's text each time, as before the edit store
		l.edits = nil
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Move(fmt.Sprintf("f%03d.warc.gz", i%files), int64(2000*(i%records)+1000)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEditStoreFollowsAsBlock moves every kind of offset through blocks
// stored in the edit store, across the stretches it reads them in, and
// checks the answers are the Block's own: before the first entry, at an
// entry (rewritten), inside one (an error), between, after the last.
func TestEditStoreFollowsAsBlock(t *testing.T) {
	s := newEditStore(t.TempDir())
	if s == nil {
		t.Fatal("no edit store")
	}
	defer s.close()
	for _, records := range []int{1, 2, sampleEvery - 1, sampleEvery, sampleEvery + 1, 3*sampleEvery + 5} {
		in := editsIntent(7, records)
		in.Entries[0].OldOffset, in.Entries[0].NewOffset = 500, 500 // something before the first entry
		blk := NewBlock(in.Entries)
		at := int64(1000 * records)
		s.put(at, blk)
		for off := int64(0); off < int64(2000*records+3000); off += 250 {
			want, werr := blk.Follow(off)
			got, ok, gerr := s.follow(at, off)
			if !ok {
				t.Fatalf("%d records: the store does not hold the block", records)
			}
			if got != want || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("%d records, offset %d: store gives %d, %v; the block %d, %v", records, off, got, gerr, want, werr)
			}
		}
	}
	if _, ok, _ := s.follow(-1, 0); ok {
		t.Error("the store answered for a block it was never given")
	}
}
