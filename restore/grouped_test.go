package restore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"warcdedup/internal/syssort"
	"warcdedup/rewritelog"
)

// syntheticLog writes a log of one run with perFile revisits in each of
// files files, in the byte order of their names as a run writes them.
func syntheticLog(t testing.TB, dir string, files, perFile int) string {
	t.Helper()
	name := filepath.Join(dir, fmt.Sprintf("rewrite-%d.log", files))
	var b []byte
	b = append(rewritelog.AppendRun(b, time.Unix(0, 0)), '\n')
	for f := range files {
		var shift int64
		for i := range perFile {
			off := int64(i) * 4000
			e := rewritelog.Entry{File: fmt.Sprintf("crawl-%07d.warc.gz", f), OldOffset: off, OldLength: 3000, NewOffset: off + shift, NewLength: 600,
				Kind: rewritelog.Revisit, PayloadDigest: "sha1:ZYXWVUTSRQPONMLKJIHGFEDCBA765432",
				RefersToURI: fmt.Sprintf("https://host.example.com/%d/%d", f, i), RefersTo: "2024-06-01T00:00:00Z"}
			shift += 600 - 3000
			b = append(e.AppendTo(b), '\n')
		}
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// joinPeak reads the log as warcrefs --undo and warcdedup undo do (the
// files with revisits left, then each file's entries in step with the
// files) and returns the largest live heap seen above the one before,
// sampled every few files, and the files and entries it was given.
func joinPeak(t *testing.T, log string, sampleEvery int) (peak int64, files, entries int) {
	t.Helper()
	s := syssort.Sorter{TempDir: t.TempDir(), InMemory: -1}
	base := liveHeap()
	g, err := rewritelog.SortByFile(context.Background(), log, s)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	sample := func() {
		if d := liveHeap() - base; d > peak {
			peak = d
		}
	}
	var todo []string
	err = EachLogged(g, func(file string, _ *rewritelog.Moves) error {
		if todo = append(todo, file); len(todo)%sampleEvery == 0 {
			sample()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, f := range todo {
		m, err := b.For(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		entries += m.Entries()
		if i%sampleEvery == 0 {
			sample()
		}
	}
	return peak, len(todo), entries
}

// loadPeak is the live heap of the log loaded whole (rewritelog.LoadFile,
// what warcrefs --undo did before), above the one before.
func loadPeak(t *testing.T, log string) int64 {
	t.Helper()
	base := liveHeap()
	m, err := rewritelog.LoadFile(log, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	d := liveHeap() - base
	runtime.KeepAlive(m)
	return d
}

// TestEachLoggedMemoryFlat proves that reading the log sorted on file, in
// step with the files (EachLogged, then ByFile.For), holds one file's
// entries: its live heap is the same for a log of 20 times the entries
// (the same entries a file, 20 times the files), where the log loaded
// whole grows by tens of bytes an entry. The whole log's growth is
// measured too, so that the test would fail on a join that held it.
func TestEachLoggedMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and sorts a log of 200,000 entries")
	}
	dir := t.TempDir()
	const perFile = 200
	small, large := syntheticLog(t, dir, 50, perFile), syntheticLog(t, dir, 1000, perFile)
	smallPeak, smallFiles, smallEntries := joinPeak(t, small, 5)
	largePeak, largeFiles, largeEntries := joinPeak(t, large, 100)
	if smallFiles != 50 || largeFiles != 1000 || smallEntries != 50*perFile || largeEntries != 1000*perFile {
		t.Fatalf("the join saw %d files, %d entries and %d files, %d entries; want 50, %d and 1000, %d",
			smallFiles, smallEntries, largeFiles, largeEntries, 50*perFile, 1000*perFile)
	}
	wholeSmall, wholeLarge := loadPeak(t, small), loadPeak(t, large)
	extra := int64(largeEntries - smallEntries)
	t.Logf("live heap: join %d -> %d bytes (%.2f bytes an entry more); log loaded whole %d -> %d bytes (%.1f bytes an entry more)",
		smallPeak, largePeak, float64(largePeak-smallPeak)/float64(extra), wholeSmall, wholeLarge, float64(wholeLarge-wholeSmall)/float64(extra))
	// The 950 more files' names (about 30 bytes each, the list of files
	// to restore) may add some 30 KB; the entries must add nothing.
	if grow := largePeak - smallPeak; grow > 256<<10 {
		t.Errorf("the join's live heap grew by %d bytes for %d more entries: it holds more than a file's entries", grow, extra)
	}
	// The measurement sees what a whole log holds.
	if grow := wholeLarge - wholeSmall; grow < 20*extra {
		t.Errorf("the log loaded whole grew by only %d bytes for %d more entries: the measurement does not see entries held", grow, extra)
	}
}
