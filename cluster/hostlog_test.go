package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"warcdedup/rewritelog"
)

// replacementText is a log's block of one replacement of file: its
// records of 1000 bytes at every 1000 bytes of the first size bytes,
// every other one (from the first) rewritten to 100 bytes.
func replacementText(file string, size int64) []byte {
	n := size / 2000 // records rewritten
	fx := rewritelog.Fixity{File: file, OldSize: size, OldSum: "aa", NewSize: size - 900*n, NewSum: "bb"}
	b := append(fx.AppendTo(nil), '\n')
	for i := range n {
		e := rewritelog.Entry{File: file, OldOffset: 2000 * i, OldLength: 1000, NewOffset: 2000*i - 900*i, NewLength: 100,
			Kind: rewritelog.Revisit, PayloadDigest: "sha1:X", RefersToURI: "http://e/", RefersTo: "2020-01-01T00:00:00Z"}
		b = append(e.AppendTo(b), '\n')
	}
	return b
}

// movedOnce is where the record at off (an odd thousand) stands after a
// replacementText of a file at least that long: the rewritten records
// before it each saved 900 bytes.
func movedOnce(off int64) int64 { return off - 900*(off/2000+1) }

// TestHostLogMemory proves that a host following records through another
// host's log holds none of its entries and reads a few kilobytes of it
// for each record, not the blocks: 200,000 entries of 100 files (a block
// of about 160 KB each) followed through, what the hostLog holds
// afterwards under 1 MB (the log's entries held, as before: 8.2 MB)
// and the bytes read for a record under 32 KB.
func TestHostLogMemory(t *testing.T) {
	const files, size = 100, 4_000_000 // 2000 entries a file
	name := filepath.Join(t.TempDir(), "rewrite.log")
	text := []byte("# run 2026-01-01T00:00:00Z\n")
	for i := range files {
		text = append(text, replacementText(fmt.Sprintf("d/f%03d.warc", i), size)...)
	}
	if err := os.WriteFile(name, text, 0o644); err != nil {
		t.Fatal(err)
	}
	block := len(text) / files
	text = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := newHostLog(name, 0)
	offsets := []int64{1000, 3000, size/2 + 1000, size - 3000, size - 1000}
	l.refresh()
	read := l.followed
	for i := range files {
		for _, off := range offsets {
			got, at, err := l.locate(fmt.Sprintf("d/f%03d.warc", i), size, off)
			if err != nil || got != size-900*size/2000 || at != movedOnce(off) {
				t.Fatalf("file %d offset %d: size %d at %d (%v), want size %d at %d", i, off, got, at, err, size-900*size/2000, movedOnce(off))
			}
		}
	}
	// In the middle of a block: a record it rewrote, and an offset
	// inside one.
	if _, _, err := l.locate("d/f007.warc", size, size/2); err != rewritelog.ErrRewritten {
		t.Errorf("a record the block rewrote: %v, want ErrRewritten", err)
	}
	if _, _, err := l.locate("d/f007.warc", size, size/2+500); err == nil {
		t.Errorf("an offset inside a record the block rewrote followed")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(l)
	if held > 1<<20 {
		t.Errorf("the hostLog of a log of %d entries holds %d bytes", files*size/2000, held)
	}
	per := (l.followed - read) / int64(files*len(offsets))
	t.Logf("%d entries: %d bytes held, %d bytes of the log read a record, blocks of %d bytes", files*size/2000, held, per, block)
	if per > 32<<10 {
		t.Errorf("%d bytes of the log read to follow a record, blocks of %d bytes", per, block)
	}
}

// TestHostLogGrowing proves that records are followed through every
// version of their files while the log grows between the reads, blocks
// taken only when whole, each read again from the log at its place
// however far the log has grown.
func TestHostLogGrowing(t *testing.T) {
	name := filepath.Join(t.TempDir(), "rewrite.log")
	earlier := append([]byte("# run 2025-01-01T00:00:00Z\n"), replacementText("d/a.warc", 20000)...) // an earlier job's
	log := append(append([]byte(nil), earlier...), "# run 2026-01-01T00:00:00Z\n"...)
	a1 := replacementText("d/a.warc", 10000) // 10000 -> 5500 bytes
	b1 := replacementText("d/b.warc", 8000)  // 8000 -> 4400
	// a's second replacement: of 5500 bytes, every other 1000 bytes at
	// 0, 2000, 4000 rewritten to 100.
	a2 := replacementText("d/a.warc", 5500)
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := newHostLog(name, int64(len(earlier)))
	check := func(step, file string, size0, off, wantSize, wantAt int64) {
		t.Helper()
		size, at, err := l.locate(file, size0, off)
		if err != nil || size != wantSize || at != wantAt {
			t.Fatalf("%s: %s at %d: size %d at %d (%v), want size %d at %d", step, file, off, size, at, err, wantSize, wantAt)
		}
	}

	write(log) // the job's run begun, nothing replaced
	check("none", "d/a.warc", 10000, 9000, 10000, 9000)

	log = append(log, a1...)
	log = append(log, b1[:len(b1)/2]...) // b's block half written
	write(log)
	check("a once", "d/a.warc", 10000, 9000, 5500, movedOnce(9000))
	check("b half written", "d/b.warc", 8000, 7000, 8000, 7000)

	log = append(log[:len(log)-len(b1)/2], b1...)
	log = append(log, "# run 2026-01-02T00:00:00Z\n"...)
	log = append(log, a2[:len(a2)-10]...) // a's second block, its last line half written
	write(log)
	check("b whole", "d/b.warc", 8000, 7000, 4400, movedOnce(7000))
	check("a's second block not whole", "d/a.warc", 10000, 9000, 5500, movedOnce(9000))

	log = append(log[:len(log)-len(a2)+10], a2...)
	write(log)
	// a2 rewrote a's records at 0 and 2000 (1000 bytes each, 100
	// after): 5000 stood at 2300 after a1, inside the one at 2000; 9000
	// at 4500, now 2700.
	if _, _, err := l.locate("d/a.warc", 10000, 5000); err == nil {
		t.Fatalf("a record inside one a's second block rewrote followed")
	}
	check("a twice", "d/a.warc", 10000, 9000, 5500-1800, 2700)
	check("b read again", "d/b.warc", 8000, 5000, 4400, movedOnce(5000))
	if _, _, err := l.locate("d/b.warc", 8000, 4000); err != rewritelog.ErrRewritten {
		t.Fatalf("a record b's block rewrote: %v, want ErrRewritten", err)
	}
}
