package rewritelog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"warcdedup/manifest"
)

// members are descriptions of gzip members of various lengths, for the
// original-member field (10) of genLog's revisit entries.
var members = sync.OnceValue(func() []member {
	var ms []member
	for n := 300; len(ms) < 40; n += 37 {
		desc, length, err := describeMember(n)
		if err != nil {
			panic(err)
		}
		ms = append(ms, member{desc, length})
	}
	return ms
})

type member struct {
	desc   string
	length int64
}

// genLog writes a log of several runs over files of records, each run
// making some responses revisits (half of them with their original
// member, field 10) and restoring some of its revisits, with "# file"
// blocks (one of them cut: its file is incomplete); it returns the log
// and each file's record lengths before the first run, which are those
// of gzip members.
func genLog(rng *rand.Rand, incomplete bool) ([]byte, map[string][]int64) {
	ms := members()
	memberOfLength := map[int64]string{}
	for _, m := range ms {
		memberOfLength[m.length] = m.desc
	}
	// Names whose escaped byte order differs from their own.
	names := []string{"a b.warc.gz", "a!b.warc.gz", "dir/c.warc.gz", "d.warc.gz", "e%.warc.gz"}
	orig := map[string][]int64{}
	cur := map[string][]int64{}
	ours := map[string][]bool{}
	for _, n := range names {
		k := 3 + rng.IntN(12)
		for range k {
			orig[n] = append(orig[n], ms[rng.IntN(len(ms))].length)
		}
		cur[n] = slices.Clone(orig[n])
		ours[n] = make([]bool, k)
	}
	byEscaped := slices.Clone(names)
	slices.SortFunc(byEscaped, func(a, b string) int { return strings.Compare(manifest.EscapeFile(a), manifest.EscapeFile(b)) })
	var log bytes.Buffer
	cut := incomplete
	for run := range 4 {
		log.Write(AppendRun(nil, time.Date(2024, 1, 1+run, 0, 0, 0, 0, time.UTC)))
		log.WriteByte('\n')
		for _, n := range byEscaped {
			if rng.IntN(3) == 0 {
				continue
			}
			var entries []Entry
			var off, shift, size int64
			for _, l := range cur[n] {
				size += l
			}
			for i, l := range cur[n] {
				switch {
				case !ours[n][i] && rng.IntN(3) == 0:
					nl := 20 + int64(rng.IntN(int(l)-20))
					e := Entry{File: n, OldOffset: off, OldLength: l, NewOffset: off + shift, NewLength: nl, Kind: Revisit,
						PayloadDigest: fmt.Sprintf("sha1:%032d", i), RefersToURI: "http://x/", RefersTo: "2024-01-01T00:00:00Z"}
					if rng.IntN(2) == 0 {
						e.OriginalMember = memberOfLength[l]
					}
					entries = append(entries, e)
					shift += nl - l
					cur[n][i], ours[n][i] = nl, true
				case ours[n][i] && rng.IntN(2) == 0:
					nl := orig[n][i]
					entries = append(entries, Entry{File: n, OldOffset: off, OldLength: l, NewOffset: off + shift, NewLength: nl, Kind: Restored})
					shift += nl - l
					cur[n][i], ours[n][i] = nl, false
				}
				off += l
			}
			if len(entries) == 0 {
				continue
			}
			fix := Fixity{File: n, OldSize: size, OldSum: "x", NewSize: size + shift, NewSum: "y"}
			log.Write(fix.AppendTo(nil))
			log.WriteByte('\n')
			if cut && run == 2 && len(entries) > 1 {
				entries = entries[:len(entries)-1]
				cut = false
			}
			for _, e := range entries {
				log.Write(e.AppendTo(nil))
				log.WriteByte('\n')
			}
		}
	}
	return log.Bytes(), orig
}

// lookup is an index line's record: file, offset and length.
type lookup struct {
	file        string
	off, length int64
}

// lookups are records' offsets, offsets inside records, ranges that end
// where a record ends (warcio.js's dns: lines) and unknown lengths.
func lookups(rng *rand.Rand, orig map[string][]int64) []lookup {
	var ls []lookup
	for n, lens := range orig {
		var off int64
		for i, l := range lens {
			switch rng.IntN(6) {
			case 0:
				ls = append(ls, lookup{n, off + int64(rng.IntN(int(l))), int64(1 + rng.IntN(50))})
			case 1:
				if i+1 < len(lens) {
					ls = append(ls, lookup{n, off, l + lens[i+1]})
				}
			case 2:
				ls = append(ls, lookup{n, off, -1})
			case 3:
				// a record the index does not have
			default:
				ls = append(ls, lookup{n, off, l})
			}
			off += l
		}
	}
	return ls
}

// followed is what a Follow gave.
type followed struct {
	off, length int64
	err         string
	hits        []string
}

// TestFollowerAsMoves proves that a Follower over a log on disk gives
// every lookup, in file and offset order, what Moves.Follow gives it over
// the log in memory: the new offset and length, the error (inside a
// rewritten record, a range that holds one, a file with a cut block), the
// entries that rewrote the record, in order; and that it reports the same
// entries as unmatched, for logs of several runs (the first without its
// "# run" line in some) read whole, from a byte offset, and since a time.
func TestFollowerAsMoves(t *testing.T) {
	dir := t.TempDir()
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		log, orig := genLog(rng, seed%3 == 0)
		if seed%4 == 1 {
			// Entries before any "# run" line: a run of their own.
			log = log[bytes.IndexByte(log, '\n')+1:]
		}
		name := filepath.Join(dir, fmt.Sprintf("log-%d", seed))
		if err := os.WriteFile(name, log, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			from  int64
			since time.Time
		}{
			{"whole", 0, time.Time{}},
			{"since the third run", 0, time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)},
			{"from the second run's line", int64(bytes.Index(log, []byte("# run 2024-01-02"))), time.Time{}},
			{"from the third run's first block", int64(bytes.Index(log, []byte("# run 2024-01-03")) + len("# run 2024-01-03T00:00:00Z\n")), time.Time{}},
		} {
			var m *Moves
			var err error
			if tc.from > 0 {
				m, err = LoadFileFrom(name, tc.from)
			} else {
				m, err = LoadFile(name, tc.since)
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := OpenCatalog(name, tc.from, tc.since)
			if err != nil {
				t.Fatal(err)
			}
			if c.Entries() != m.Entries() || !slices.Equal(c.Runs, m.Runs) || len(c.Files()) != len(m.Files()) {
				t.Fatalf("seed %d %s: catalog of %d entries, %d runs, %d files; Moves %d, %d, %d", seed, tc.name,
					c.Entries(), len(c.Runs), len(c.Files()), m.Entries(), len(m.Runs), len(m.Files()))
			}
			ls := lookups(rng, orig)
			// The order of a merge join: file rank, offset, length.
			slices.SortFunc(ls, func(a, b lookup) int {
				fa, _ := c.Resolve([]byte(a.file))
				fb, _ := c.Resolve([]byte(b.file))
				ra, rb := -1, -1
				if fa != nil {
					ra = c.Rank(fa)
				}
				if fb != nil {
					rb = c.Rank(fb)
				}
				if ra != rb {
					return ra - rb
				}
				if a.off != b.off {
					return int(a.off - b.off)
				}
				return int(a.length - b.length)
			})
			for _, l := range ls {
				if f := m.Lookup(l.file); f != nil {
					f.Lines++
				}
				if f, _ := c.Resolve([]byte(l.file)); f != nil {
					f.Lines++
				}
			}
			var unmatched []string
			fw, err := c.Follow(func(f *File, mv Move, landed int) {
				if landed == 0 {
					unmatched = append(unmatched, fmt.Sprintf("%s %d", f.Name, mv.Line))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			follow := func(fn func(rewrote func(Move, int64, int64) error) (int64, int64, error)) followed {
				var r followed
				var err error
				r.off, r.length, err = fn(func(mv Move, off, length int64) error {
					r.hits = append(r.hits, fmt.Sprintf("%+v at %d+%d", mv, off, length))
					return nil
				})
				if err != nil {
					r.err = err.Error()
				}
				return r
			}
			for _, l := range ls {
				fm, fc := m.Lookup(l.file), c.byName[l.file]
				if (fm == nil) != (fc == nil) {
					t.Fatalf("seed %d %s: %s in one log and not the other", seed, tc.name, l.file)
				}
				if fm == nil {
					continue
				}
				want := follow(func(cb func(Move, int64, int64) error) (int64, int64, error) {
					return m.Follow(fm, l.off, l.length, cb)
				})
				got := follow(func(cb func(Move, int64, int64) error) (int64, int64, error) {
					return fw.Follow(fc, l.off, l.length, cb)
				})
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("seed %d %s: %+v:\nFollower %+v\nMoves    %+v", seed, tc.name, l, got, want)
				}
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			var want []string
			m.Unmatched(func(f *File, mv Move) { want = append(want, fmt.Sprintf("%s %d", f.Name, mv.Line)) })
			slices.Sort(want)
			slices.Sort(unmatched)
			if !slices.Equal(unmatched, want) {
				t.Fatalf("seed %d %s: unmatched\n%q, want\n%q", seed, tc.name, unmatched, want)
			}
		}
	}
}
