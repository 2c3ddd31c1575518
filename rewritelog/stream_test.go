package rewritelog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"warcdedup/internal/syssort"
	"warcdedup/manifest"
)

// TestStreamingReadersAsMoves proves that the readers that do not hold
// the log say what a Moves of the whole log says: LoadFileOf, of each
// file alone and of two at once, the same version, incomplete block,
// live revisits (with the log's line numbers), undone runs and original
// members, from the start of the log and from a run's line on (numbered
// as in the whole log); Versions the same last version of every file,
// sorted in memory and by the system sort, in the byte order of the
// escaped names.
func TestStreamingReadersAsMoves(t *testing.T) {
	dir := t.TempDir()
	for seed := range 30 {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		log, orig := genLog(rng, seed%3 == 0)
		if seed%5 == 2 {
			lines := bytes.SplitAfter(log, []byte("\n"))
			i := 1 + rng.IntN(len(lines)-1)
			log = bytes.Join(slices.Insert(lines, i, []byte("# a comment\n")), nil)
		}
		name := filepath.Join(dir, fmt.Sprintf("log-%d", seed))
		if err := os.WriteFile(name, log, 0o644); err != nil {
			t.Fatal(err)
		}
		whole, err := LoadFile(name, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for n := range orig {
			files = append(files, n)
		}
		slices.Sort(files)
		for _, n := range append(slices.Clone(files), "not-named.warc.gz") {
			one, err := LoadFileOf(name, 0, []string{n})
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, n, err)
			}
			if got, want := viewOf(t, one, n), viewOf(t, whole, n); !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d: %s: LoadFileOf %+v\nwhole log %+v", seed, n, got, want)
			}
		}
		two, err := LoadFileOf(name, 0, files[1:3])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range files {
			got, want := viewOf(t, two, n), viewOf(t, whole, n)
			if n != files[1] && n != files[2] {
				want = fileView{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d: %s of two files: %+v\nwant %+v", seed, n, got, want)
			}
		}

		// From the third run's line on: the log from there, its lines
		// numbered as in the whole log (blank lines count).
		at := bytes.Index(log, []byte("# run 2024-01-03"))
		before := bytes.Count(log[:at], []byte("\n"))
		tail := filepath.Join(dir, fmt.Sprintf("tail-%d", seed))
		if err := os.WriteFile(tail, append(bytes.Repeat([]byte("\n"), before), log[at:]...), 0o644); err != nil {
			t.Fatal(err)
		}
		since, err := LoadFile(tail, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range files {
			from, err := LoadFileOf(name, int64(at), []string{n})
			if err != nil {
				t.Fatal(err)
			}
			// The same but for the log's name in errors.
			got, want := fmt.Sprintf("%+v", viewOf(t, from, n)), strings.ReplaceAll(fmt.Sprintf("%+v", viewOf(t, since, n)), tail, name)
			if got != want {
				t.Errorf("seed %d: %s from offset %d: %+v\nwant %+v", seed, n, at, got, want)
			}
		}

		s := syssort.Sorter{TempDir: dir}
		if seed%2 == 0 {
			s.InMemory = -1 // the system sort
		}
		var got []Fixity
		if err := Versions(context.Background(), name, s, func(f Fixity) error {
			got = append(got, f)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var want []Fixity
		for _, f := range whole.Files() {
			if v, ok := whole.Version(f.Name); ok {
				want = append(want, v)
			}
		}
		slices.SortFunc(want, func(a, b Fixity) int {
			return strings.Compare(manifest.EscapeFile(a.File), manifest.EscapeFile(b.File))
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("seed %d: Versions %+v\nwant %+v", seed, got, want)
		}
	}
}

// TestStreamingReadersErrors: a log LoadFile refuses, LoadFileOf and
// Versions refuse too, naming the line, whatever file is asked for.
func TestStreamingReadersErrors(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct{ log, want string }{
		{"# run 2026-01-01T00:00:00Z\nb.warc 0 200 0 100 revisit sha1:AAAA u d\na.warc 0 200 0 100 revisit sha1:AAAA u d\n", "line 3: a.warc after b.warc"},
		{"# run 2026-01-01T00:00:00Z\na.warc 0 200 0 100 revisit sha1:AAAA u d\nb.warc 0 200 x 100 revisit sha1:AAAA u d\n", "line 3:"},
		{"# file a.warc 1000 x 900 y\nb.warc 0 200 0 100 revisit sha1:AAAA u d\n", "line 2: an entry of b.warc in the block of a.warc"},
	} {
		name := filepath.Join(dir, fmt.Sprint(i))
		os.WriteFile(name, []byte(c.log), 0o644)
		_, err := LoadFileOf(name, 0, []string{"a.warc"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: LoadFileOf: %v, want %q", i, err, c.want)
		}
		err = Versions(context.Background(), name, syssort.Sorter{TempDir: dir}, func(Fixity) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: Versions: %v, want %q", i, err, c.want)
		}
	}
}

// writeBigLog writes a log of two runs over files files, each run
// rewriting perFile records of each: 2*files*perFile entries, every
// block complete.
func writeBigLog(t testing.TB, name string, files, perFile int) {
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const rec, saved = 1000, 600
	sum := func(i, v int) string { return fmt.Sprintf("blake3:%064x", i*4+v) }
	for run := range 2 {
		w.Write(AppendRun(nil, time.Date(2026, time.Month(1+run), 1, 0, 0, 0, 0, time.UTC)))
		w.WriteByte('\n')
		for i := range files {
			n := fmt.Sprintf("crawl/f%07d.warc.gz", i)
			size := int64(2*perFile*rec - run*perFile*saved)
			fix := Fixity{File: n, OldSize: size, OldSum: sum(i, run), NewSize: size - int64(perFile*saved), NewSum: sum(i, run+1)}
			w.Write(fix.AppendTo(nil))
			w.WriteByte('\n')
			// Run 0 rewrites the first half of the records, run 1 the
			// second, which run 0 moved by what it saved.
			base := int64(run * perFile * (rec - saved))
			if run == 1 {
				base = int64(perFile * (rec - saved))
			}
			for j := range perFile {
				old := base + int64(j*rec)
				e := Entry{File: n, OldOffset: old, OldLength: rec, NewOffset: old - int64(j*saved), NewLength: rec - saved, Kind: Revisit,
					PayloadDigest: fmt.Sprintf("sha1:%032d", j), RefersToURI: "http://example.com/", RefersTo: "2026-01-01T00:00:00Z"}
				w.Write(e.AppendTo(nil))
				w.WriteByte('\n')
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// peakHeap runs fn and returns the most heap its objects took meanwhile
// above what they took before, sampled every 100 µs, and what stays
// after it (what fn returned). With live, the collector runs whenever the
// heap grew by 1%, so that the peak is of what fn holds, not of garbage
// the collector has not yet come to (it lets 4 MiB of it pile up).
func peakHeap(live bool, fn func() any) (peak, kept int64) {
	if live {
		defer debug.SetGCPercent(debug.SetGCPercent(1))
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	runtime.GC()
	base := read()
	var max atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if h := read(); h > max.Load() {
				max.Store(h)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	v := fn()
	close(stop)
	<-done
	runtime.GC()
	kept = read() - base
	runtime.KeepAlive(v)
	return max.Load() - base, kept
}

// TestStreamingReadersMemory proves the bound: at 2*10^4 and at 4*10^5
// entries (and 20 times the files), the heap LoadFileOf keeps for one
// file, and the most LoadFileOf and Versions take (the system sort doing
// Versions' sorting at both sizes) stay under 4 MiB and grow by less than
// 2 MiB, while the Moves of the whole log (LoadFile), the test's measure
// that it can tell, grows by more than 16 MiB (from 3 to 57 MB).
func TestStreamingReadersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a log of 400,000 entries")
	}
	dir := t.TempDir()
	type figures struct{ whole, of, ofPeak, versions, versionsPeak int64 }
	measure := func(files, perFile int) figures {
		name := filepath.Join(dir, fmt.Sprintf("log-%d", files))
		writeBigLog(t, name, files, perFile)
		var fg figures
		_, fg.whole = peakHeap(false, func() any {
			m, err := LoadFile(name, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			return m
		})
		fg.ofPeak, fg.of = peakHeap(true, func() any {
			m, err := LoadFileOf(name, 0, []string{"crawl/f0000001.warc.gz"})
			if err != nil {
				t.Fatal(err)
			}
			if m.Entries() != 2*perFile {
				t.Fatalf("%d entries of the file, want %d", m.Entries(), 2*perFile)
			}
			return m
		})
		fg.versionsPeak, fg.versions = peakHeap(true, func() any {
			n := 0
			err := Versions(context.Background(), name, syssort.Sorter{TempDir: dir, InMemory: -1}, func(f Fixity) error {
				if want := fmt.Sprintf("blake3:%064x", n*4+2); f.NewSum != want {
					t.Fatalf("version %d: %+v, want sum %s", n, f, want)
				}
				n++
				return nil
			})
			if err != nil || n != files {
				t.Fatalf("%d versions, %v", n, err)
			}
			return nil
		})
		t.Logf("%d files, %d entries: whole log kept %d bytes; LoadFileOf peak %d, kept %d; Versions peak %d, kept %d",
			files, 2*files*perFile, fg.whole, fg.ofPeak, fg.of, fg.versionsPeak, fg.versions)
		return fg
	}
	small, big := measure(1000, 10), measure(20000, 10)
	if big.whole-small.whole < 16<<20 {
		t.Fatalf("the whole log's Moves grew by %d bytes only: the log is too small to tell", big.whole-small.whole)
	}
	for _, c := range []struct {
		what       string
		small, big int64
	}{
		{"LoadFileOf kept", small.of, big.of},
		{"LoadFileOf took at most", small.ofPeak, big.ofPeak},
		{"Versions took at most", small.versionsPeak, big.versionsPeak},
	} {
		if c.big > 4<<20 || c.big-c.small > 2<<20 {
			t.Errorf("%s %d bytes at %d entries, %d at %d: it grows with the log", c.what, c.small, 2*1000*10, c.big, 2*20000*10)
		}
	}
}
