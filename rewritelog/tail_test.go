package rewritelog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// replacement is the block of one replacement of file, size bytes of
// records of 1000 bytes (size a multiple of 2000): those at the odd
// thousands (1000, 3000, ...) rewritten to 100 bytes.
func replacement(file string, size int64) []byte {
	n := size / 2000 // records rewritten
	fx := Fixity{File: file, OldSize: size, OldSum: "aa", NewSize: size - 900*n, NewSum: "bb"}
	b := append(fx.AppendTo(nil), '\n')
	for i := range n {
		e := Entry{File: file, OldOffset: 1000 + 2000*i, OldLength: 1000, NewOffset: 1000 + 2000*i - 900*i, NewLength: 100,
			Kind: Revisit, PayloadDigest: "sha1:X", RefersToURI: "http://e/", RefersTo: "2020-01-01T00:00:00Z"}
		b = append(e.AppendTo(b), '\n')
	}
	return b
}

// replaced is where the record at off (not one a replacement rewrote)
// stands after a replacement of a file of size bytes: each rewritten
// record before it saved 900 bytes.
func replaced(off, size int64) int64 {
	before := min((off+1000)/2000, size/2000)
	return off - 900*before
}

const runLine = "# run 2026-01-01T00:00:00Z\n"

// secondA is a second replacement of d/a.warc after replacement's of
// 10000 bytes (5500 bytes then): its records at 1100 and 3300 (2000 and
// 6000 before, 1000 bytes each) rewritten to 100 bytes, 3700 bytes after.
func secondA() string {
	fx := Fixity{File: "d/a.warc", OldSize: 5500, OldSum: "bb", NewSize: 3700, NewSum: "cc"}
	b := append(fx.AppendTo(nil), '\n')
	for _, e := range []Entry{
		{File: "d/a.warc", OldOffset: 1100, OldLength: 1000, NewOffset: 1100, NewLength: 100},
		{File: "d/a.warc", OldOffset: 3300, OldLength: 1000, NewOffset: 2400, NewLength: 100},
	} {
		e.Kind, e.PayloadDigest, e.RefersToURI, e.RefersTo = Revisit, "sha1:Y", "http://e/", "2020-01-01T00:00:00Z"
		b = append(e.AppendTo(b), '\n')
	}
	return string(b)
}

// writeLog writes a log file and returns its name.
func writeLog(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "rewrite.log")
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestTailOffsets proves where Where puts every kind of offset of a
// replaced file, in a block it reads whole (5 entries) and in one it
// narrows by a binary search over the log's lines first (2000 entries,
// 150 KB): records before, at, inside, between and after the records
// the block rewrote, at its start, middle and end.
func TestTailOffsets(t *testing.T) {
	errInside := errors.New("inside")
	cases := []struct {
		name string
		off  func(size int64) int64
		want error // nil: the record moved to replaced(off, size)
	}{
		{"before the first rewritten record", func(int64) int64 { return 500 }, nil},
		{"the first rewritten record", func(int64) int64 { return 1000 }, ErrRewritten},
		{"inside the first rewritten record", func(int64) int64 { return 1500 }, errInside},
		{"right after the first rewritten record", func(int64) int64 { return 2000 }, nil},
		{"inside a kept record", func(int64) int64 { return 2500 }, nil},
		{"a kept record in the middle", func(s int64) int64 { return s / 4000 * 2000 }, nil},
		{"a rewritten record in the middle", func(s int64) int64 { return s/4000*2000 + 1000 }, ErrRewritten},
		{"inside a rewritten record in the middle", func(s int64) int64 { return s/4000*2000 + 1999 }, errInside},
		{"the last kept record", func(s int64) int64 { return s - 2000 }, nil},
		{"the last rewritten record", func(s int64) int64 { return s - 1000 }, ErrRewritten},
		{"the end of the file", func(s int64) int64 { return s }, nil},
		{"after the end of the file", func(s int64) int64 { return s + 12345 }, nil},
	}
	for _, size := range []int64{10_000, 4_000_000} {
		name := writeLog(t, runLine+string(replacement("d/a.warc", size)))
		tail := NewTail(name, 0)
		for _, c := range cases {
			t.Run(fmt.Sprintf("%d bytes/%s", size, c.name), func(t *testing.T) {
				off := c.off(size)
				read := tail.followed
				gotSize, at, err := tail.Where("d/a.warc", size, off)
				switch {
				case c.want == errInside:
					if err == nil || !strings.Contains(err.Error(), "inside the record at") {
						t.Fatalf("offset %d: at %d (%v), want an error: inside a rewritten record", off, at, err)
					}
				case c.want != nil:
					if !errors.Is(err, c.want) {
						t.Fatalf("offset %d: at %d (%v), want %v", off, at, err, c.want)
					}
				case err != nil || gotSize != size-900*(size/2000) || at != replaced(off, size):
					t.Fatalf("offset %d: size %d at %d (%v), want size %d at %d", off, gotSize, at, err, size-900*(size/2000), replaced(off, size))
				}
				if n := tail.followed - read; n > 32<<10 {
					t.Errorf("%d bytes of the log read to follow one record", n)
				}
			})
		}
	}
}

// TestTailBlocks proves which blocks of a log Where follows a record
// through: only whole blocks of the file, logged since the Tail's start,
// dry runs' left out, every run's in order; a block that entries are
// missing from stops its file's records and no other's.
func TestTailBlocks(t *testing.T) {
	a := string(replacement("d/a.warc", 10000)) // 10000 -> 5500 bytes
	b := string(replacement("d/b.warc", 8000))  // 8000 -> 4400
	a2 := secondA()                             // 5500 -> 3700
	earlier := "# run 2019-01-01T00:00:00Z\n" + strings.Replace(string(replacement("d/a.warc", 12000)), "12000 aa 6600 bb", "12000 cc 10000 aa", 1)
	dry := strings.Replace(a, " bb\n", " -\n", 1)
	aLines := strings.SplitAfter(a, "\n")
	cases := []struct {
		name     string
		log      string // "" for no log file
		since    int64
		file     string
		size0    int64
		off      int64
		size, at int64
		err      string
	}{
		{"no log: the version hashed", "", 0, "d/a.warc", 10000, 6000, 10000, 6000, ""},
		{"a file the log does not name", runLine + a, 0, "d/c.warc", 7000, 6000, 7000, 6000, ""},
		{"a whole block", runLine + a, 0, "d/a.warc", 10000, 6000, 5500, 3300, ""},
		{"the second file's block", runLine + a + b, 0, "d/b.warc", 8000, 6000, 4400, 3300, ""},
		{"a dry run's block moves nothing", runLine + dry, 0, "d/a.warc", 10000, 6000, 10000, 6000, ""},
		{"a block half written is not taken", runLine + strings.Join(aLines[:3], ""), 0, "d/a.warc", 10000, 6000, 10000, 6000, ""},
		{"a line half written is not taken", runLine + a[:len(a)-5], 0, "d/a.warc", 10000, 6000, 10000, 6000, ""},
		{"an earlier job's block is left out", earlier + runLine + a, int64(len(earlier)), "d/a.warc", 10000, 6000, 5500, 3300, ""},
		{"blocks of two runs, in order", runLine + a + b + "# run 2026-01-02T00:00:00Z\n" + a2, 0, "d/a.warc", 10000, 8000, 3700, 4400 - 1800, ""},
		{"between the second run's records", runLine + a + b + "# run 2026-01-02T00:00:00Z\n" + a2, 0, "d/a.warc", 10000, 4000, 3700, 2200 - 900, ""},
		{"a record the second run rewrote", runLine + a + "# run 2026-01-02T00:00:00Z\n" + a2, 0, "d/a.warc", 10000, 2000, 0, 0, ErrRewritten.Error()},
		{"entries missing: the file's records are not followed", runLine + strings.Join(append(aLines[:3:3], aLines[4:]...), "") + b, 0,
			"d/a.warc", 10000, 6000, 0, 0, "entries are missing"},
		{"entries missing from another file's block", runLine + strings.Join(append(aLines[:3:3], aLines[4:]...), "") + b, 0,
			"d/b.warc", 8000, 6000, 4400, 3300, ""},
		{"an entry outside its file's block", runLine + a + strings.SplitAfter(b, "\n")[1], 0, "d/a.warc", 10000, 6000, 0, 0, "outside its file's block"},
		{"a log shorter than since", runLine, 100, "d/a.warc", 10000, 6000, 0, 0, "entries are lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "rewrite.log")
			if c.log != "" {
				if err := os.WriteFile(name, []byte(c.log), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tail := NewTail(name, c.since)
			size, at, err := tail.Where(c.file, c.size0, c.off)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("size %d at %d (%v), want an error %q", size, at, err, c.err)
				}
				return
			}
			if err != nil || size != c.size || at != c.at {
				t.Fatalf("size %d at %d (%v), want size %d at %d", size, at, err, c.size, c.at)
			}
			if got, err := tail.Size(c.file, c.size0); err != nil || got != c.size {
				t.Fatalf("Size: %d (%v), want %d", got, err, c.size)
			}
		})
	}
}

// TestTailGrowing proves that records are followed through every block
// of their files while the log grows between the reads: blocks taken
// only when whole, each read again from the log at its place however far
// the log has grown, and a log found shorter than what was read refused.
func TestTailGrowing(t *testing.T) {
	name := filepath.Join(t.TempDir(), "rewrite.log")
	earlier := "# run 2025-01-01T00:00:00Z\n" + string(replacement("d/a.warc", 20000)) // an earlier job's
	a1 := string(replacement("d/a.warc", 10000))                                       // 10000 -> 5500 bytes
	b1 := string(replacement("d/b.warc", 8000))                                        // 8000 -> 4400
	a2 := secondA()                                                                    // 5500 -> 3700
	type check struct {
		file       string
		size0, off int64
		size, at   int64
		err        string
	}
	steps := []struct {
		name   string
		log    string // the whole log at this step
		checks []check
	}{
		{"the job's run begun, nothing replaced", earlier + runLine, []check{
			{"d/a.warc", 10000, 8000, 10000, 8000, ""}}},
		{"a replaced, b's block half written", earlier + runLine + a1 + b1[:len(b1)/2], []check{
			{"d/a.warc", 10000, 8000, 5500, replaced(8000, 10000), ""},
			{"d/b.warc", 8000, 6000, 8000, 6000, ""}}},
		{"b whole, a's second block's last line half written", earlier + runLine + a1 + b1 + "# run 2026-01-02T00:00:00Z\n" + a2[:len(a2)-10], []check{
			{"d/b.warc", 8000, 6000, 4400, replaced(6000, 8000), ""},
			{"d/a.warc", 10000, 8000, 5500, replaced(8000, 10000), ""}}},
		{"a's second block whole", earlier + runLine + a1 + b1 + "# run 2026-01-02T00:00:00Z\n" + a2, []check{
			{"d/a.warc", 10000, 8000, 3700, 4400 - 1800, ""},
			{"d/a.warc", 10000, 6000, 0, 0, ErrRewritten.Error()}, // 3300 after a1
			{"d/a.warc", 10000, 6100, 0, 0, "inside the record at 3300"},
			{"d/a.warc", 10000, 4000, 3700, 2200 - 900, ""},
			{"d/b.warc", 8000, 4000, 4400, replaced(4000, 8000), ""},
			{"d/b.warc", 8000, 3000, 0, 0, ErrRewritten.Error()}}},
		{"the log cut short", earlier + runLine + a1, []check{
			{"d/a.warc", 10000, 8000, 0, 0, "entries are lost"}}},
	}
	tail := NewTail(name, int64(len(earlier)))
	for _, s := range steps {
		if err := os.WriteFile(name, []byte(s.log), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.checks {
			size, at, err := tail.Where(c.file, c.size0, c.off)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s: %s at %d: size %d at %d (%v), want an error %q", s.name, c.file, c.off, size, at, err, c.err)
				}
				continue
			}
			if err != nil || size != c.size || at != c.at {
				t.Errorf("%s: %s at %d: size %d at %d (%v), want size %d at %d", s.name, c.file, c.off, size, at, err, c.size, c.at)
			}
		}
	}
}

// TestTailWhileAppended proves that a Tail read while the rewrite log's
// writer (Log) appends to it gives, at each read, the record's place
// after some whole number of the file's replacements, never fewer than
// at the read before, and after the last once the writer is done.
func TestTailWhileAppended(t *testing.T) {
	const versions = 40
	name := filepath.Join(t.TempDir(), "rewrite.log")
	// d/a.warc is records of 1000 bytes; its replacement v rewrites the
	// v-th to 100 bytes (at 100*v, after the v revisits before it), so
	// that version v is size0 - 900*v bytes and the record at off0 of
	// version 0 (never rewritten) is at off0 - 900*v in it.
	const size0, off0 = int64(1_000_000), int64(900_000)
	intent := func(v int64) *Intent {
		size := size0 - 900*v
		return &Intent{Fixity: Fixity{File: "d/a.warc", OldSize: size, OldSum: "aa", NewSize: size - 900, NewSum: "bb"},
			Entries: []Entry{{File: "d/a.warc", OldOffset: 100 * v, OldLength: 1000, NewOffset: 100 * v, NewLength: 100,
				Kind: Revisit, PayloadDigest: "sha1:X", RefersToURI: "http://e/", RefersTo: "2020-01-01T00:00:00Z"}}}
	}
	l, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for v := range int64(versions) {
			l.StartRun(time.Date(2026, 1, 1, 0, 0, int(v), 0, time.UTC))
			if err := l.Append(intent(v)); err != nil {
				done <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		done <- l.Close()
	}()
	tail := NewTail(name, 0)
	last, reads := int64(0), 0
	for finished := false; !finished; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		size, at, err := tail.Where("d/a.warc", size0, off0)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		v := (size0 - size) / 900
		if (size0-size)%900 != 0 || v < last || v > versions || at != off0-900*v {
			t.Fatalf("read %d: size %d at %d: no version after %d", reads, size, at, last)
		}
		last = v
	}
	if last != versions {
		t.Errorf("after the writer: version %d, want %d", last, versions)
	}
	t.Logf("%d reads while %d blocks were appended", reads, versions)
}

// TestTailAgreesWithMove proves that a Tail follows offsets as the
// writer's follower (Log.Move) does, on a log of several runs of revisits
// and restorations over files of records of random lengths, blocks large
// enough to be searched: the same place, or both the same error, for
// records' starts, offsets inside them and past the end.
func TestTailAgreesWithMove(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	name := filepath.Join(t.TempDir(), "rewrite.log")
	type file struct {
		name      string
		orig, cur []int64 // record lengths
		ours      []bool  // a revisit of a run
		size0     int64
	}
	var files []*file
	for i := range 3 {
		f := &file{name: fmt.Sprintf("d/f%d.warc.gz", i)}
		for range 3000 {
			l := int64(200 + rng.IntN(1800))
			f.orig, f.cur, f.ours = append(f.orig, l), append(f.cur, l), append(f.ours, false)
			f.size0 += l
		}
		files = append(files, f)
	}
	l, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	for run := range 4 {
		l.StartRun(time.Date(2026, 1, 1+run, 0, 0, 0, 0, time.UTC))
		for _, f := range files {
			var entries []Entry
			var off, shift, size int64
			for _, n := range f.cur {
				size += n
			}
			for i, n := range f.cur {
				switch {
				case !f.ours[i] && rng.IntN(10) == 0:
					nl := 20 + int64(rng.IntN(int(n)-20))
					entries = append(entries, Entry{File: f.name, OldOffset: off, OldLength: n, NewOffset: off + shift, NewLength: nl, Kind: Revisit,
						PayloadDigest: "sha1:X", RefersToURI: "http://e/", RefersTo: "2020-01-01T00:00:00Z"})
					shift += nl - n
					f.cur[i], f.ours[i] = nl, true
				case f.ours[i] && rng.IntN(3) == 0:
					entries = append(entries, Entry{File: f.name, OldOffset: off, OldLength: n, NewOffset: off + shift, NewLength: f.orig[i], Kind: Restored})
					shift += f.orig[i] - n
					f.cur[i], f.ours[i] = f.orig[i], false
				}
				off += n
			}
			in := &Intent{Fixity: Fixity{File: f.name, OldSize: size, OldSum: "aa", NewSize: size + shift, NewSum: "bb"}, Entries: entries}
			if err := l.Append(in); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(name); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tail := NewTail(name, 0)
	var checked, moved, rewritten int
	for _, f := range files {
		var off int64
		for _, n := range f.orig {
			for _, o := range []int64{off, off + 1 + rng.Int64N(n-1)} {
				want, werr := l.Move(f.name, o)
				size, got, err := tail.Where(f.name, f.size0, o)
				switch {
				case (werr == nil) != (err == nil):
					t.Fatalf("%s at %d: Tail %d (%v), Log.Move %d (%v)", f.name, o, got, err, want, werr)
				case err == nil && got != want:
					t.Fatalf("%s at %d: Tail %d, Log.Move %d", f.name, o, got, want)
				case errors.Is(werr, ErrRewritten) != errors.Is(err, ErrRewritten):
					t.Fatalf("%s at %d: Tail %v, Log.Move %v", f.name, o, err, werr)
				case err == nil:
					moved++
				case errors.Is(err, ErrRewritten):
					rewritten++
				}
				if fx, _ := l.Version(f.name); size != fx.NewSize && err == nil {
					t.Fatalf("%s: size %d, the log's last version %d", f.name, size, fx.NewSize)
				}
				checked++
			}
			off += n
		}
		if got, _, err := tail.Where(f.name, f.size0, off); err != nil || got == f.size0 {
			t.Fatalf("%s: size %d (%v) after 4 runs", f.name, got, err)
		}
	}
	t.Logf("%d offsets: %d moved, %d rewritten, %d inside rewritten records; %d bytes of the log read a lookup",
		checked, moved, rewritten, checked-moved-rewritten, tail.followed/int64(checked))
	if moved == 0 || rewritten == 0 || checked-moved-rewritten == 0 {
		t.Errorf("some kind of offset not checked")
	}
}

// TestTailMemory proves that a Tail holds none of the log's entries and
// reads a few kilobytes of it for each record, not the blocks: 200,000
// entries of 100 files (a block of about 160 KB each) followed through,
// what the Tail holds afterwards under 1 MB (the entries held, as a
// Moves does: 8.2 MB) and the bytes read for a record under 32 KB.
func TestTailMemory(t *testing.T) {
	const files, size = 100, 4_000_000 // 2000 entries a file
	name := filepath.Join(t.TempDir(), "rewrite.log")
	text := []byte(runLine)
	for i := range files {
		text = append(text, replacement(fmt.Sprintf("d/f%03d.warc", i), size)...)
	}
	if err := os.WriteFile(name, text, 0o644); err != nil {
		t.Fatal(err)
	}
	block := len(text) / files
	text = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tail := NewTail(name, 0)
	offsets := []int64{2000, 4000, size / 2, size - 2000, size}
	if _, err := tail.Size("d/f000.warc", size); err != nil {
		t.Fatal(err)
	}
	read := tail.followed
	for i := range files {
		for _, off := range offsets {
			got, at, err := tail.Where(fmt.Sprintf("d/f%03d.warc", i), size, off)
			if err != nil || got != size-900*size/2000 || at != replaced(off, size) {
				t.Fatalf("file %d offset %d: size %d at %d (%v), want size %d at %d", i, off, got, at, err, size-900*size/2000, replaced(off, size))
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(tail)
	if held > 1<<20 {
		t.Errorf("the Tail of a log of %d entries holds %d bytes", files*size/2000, held)
	}
	per := (tail.followed - read) / int64(files*len(offsets))
	t.Logf("%d entries: %d bytes held, %d bytes of the log read a record, blocks of %d bytes", files*size/2000, held, per, block)
	if per > 32<<10 {
		t.Errorf("%d bytes of the log read to follow a record, blocks of %d bytes", per, block)
	}
}
