package reindex

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/internal/syssort"
	"warcdedup/rewritelog"
)

// peakLive runs fn and returns the largest live heap (as the collector
// last marked it, collecting often) above the one before fn.
func peakLive(fn func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	base := int64(s[0].Value.Uint64())
	var peak int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, int64(s[0].Value.Uint64())-base)
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	fn()
	runtime.GC()
	close(done)
	wg.Wait()
	return peak
}

// logInput writes benchInput(lines) to dir: an index sorted by urlkey
// over 100 files, and a log making 30% of its records revisits.
func logInput(t *testing.T, dir string, lines int) (index, log string) {
	t.Helper()
	ix, l := benchInput(lines)
	index, log = filepath.Join(dir, strconv.Itoa(lines)+".cdxj"), filepath.Join(dir, strconv.Itoa(lines)+".log")
	if err := os.WriteFile(index, ix, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, l, 0o644); err != nil {
		t.Fatal(err)
	}
	return index, log
}

// TestLogFollowedOnDiskMemoryFlat proves that an update following the
// log on disk (Updater.Log: what warccdx, run --cdx and undo --cdx do,
// dedup's indexUpdate) holds neither the log's entries nor the index's
// lines: its live heap is about the same for 20 times the lines and
// entries, where the log loaded whole (Updater.Moves) grows by tens of
// bytes an entry, measured the same way so that the test sees what is
// held.
func TestLogFollowedOnDiskMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("updates indexes of 10,000 and 200,000 lines")
	}
	dir := t.TempDir()
	update := func(index, log string) (Stats, int) {
		c, err := rewritelog.OpenCatalog(log, 0, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		j := &Copy{Updater: Updater{Log: c, Sort: syssort.Sorter{TempDir: t.TempDir(), InMemory: -1}}, Out: cdx.NewWriter(io.Discard)}
		if err := j.Indexes(context.Background(), []Input{FileInput(index)}); err != nil {
			t.Fatal(err)
		}
		j.Out.Flush()
		return j.Stats, c.Entries()
	}
	var peaks, whole [2]int64
	var entries [2]int
	for i, n := range []int{10000, 200000} {
		index, log := logInput(t, dir, n)
		// The least of three peaks: what the update holds is in each,
		// while a busy machine's timing (a sample between a buffer's
		// use and the GC that frees it) only ever adds to one.
		for try := range 3 {
			var st Stats
			peak := peakLive(func() { st, entries[i] = update(index, log) })
			if st.Lines != int64(n) || st.Revisits != int64(entries[i]) || st.Failed != 0 {
				t.Fatalf("%d lines: %+v, %d entries in the log", n, st, entries[i])
			}
			if try == 0 || peak < peaks[i] {
				peaks[i] = peak
			}
		}
		var m *rewritelog.Moves
		whole[i] = peakLive(func() {
			var err error
			if m, err = rewritelog.LoadFile(log, time.Time{}); err != nil {
				t.Fatal(err)
			}
		})
		runtime.KeepAlive(m)
	}
	extra := int64(entries[1] - entries[0])
	t.Logf("peak live heap: log on disk %d -> %d bytes, log loaded whole %d -> %d bytes, for %d more entries and 190,000 more lines",
		peaks[0], peaks[1], whole[0], whole[1], extra)
	if grow := peaks[1] - peaks[0]; grow > 1<<20 {
		t.Errorf("following the log on disk, the live heap grew by %d bytes for %d more entries and 190,000 more lines", grow, extra)
	}
	if grow := whole[1] - whole[0]; grow < 20*extra {
		t.Errorf("the log loaded whole grew by only %d bytes for %d more entries: the measurement does not see entries held", grow, extra)
	}
}
