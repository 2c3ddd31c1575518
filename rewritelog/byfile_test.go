package rewritelog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/syssort"
	"warcdedup/manifest"
)

// fileView is what undo asks the log of one file.
type fileView struct {
	Names      bool
	Version    Fixity
	Versioned  bool
	Incomplete string
	Live       []string // each live revisit: its entry and where it stands
	LiveErr    string
	Undone     Undoing
	IsUndone   bool
	Members    []string
}

func viewOf(t *testing.T, m *Moves, name string) fileView {
	t.Helper()
	var v fileView
	v.Names = m.Names(name)
	v.Version, v.Versioned = m.Version(name)
	if err := m.Incomplete(name); err != nil {
		v.Incomplete = err.Error()
	}
	v.Undone, v.IsUndone = m.Undone(name)
	f := m.Lookup(name)
	if f == nil {
		return v
	}
	var lines []int64
	err := m.Live(f, func(mv Move, off int64) error {
		v.Live = append(v.Live, fmt.Sprintf("line %d: %d+%d -> %d+%d %v %s member %v, now at %d",
			mv.Line, mv.OldOffset, mv.OldLength, mv.NewOffset, mv.NewLength, mv.Kind, mv.PayloadDigest, mv.Member, off))
		if mv.Member {
			lines = append(lines, mv.Line)
		}
		return nil
	})
	if err != nil {
		v.LiveErr = err.Error()
	}
	if err := m.OriginalMembers(f, lines, func(line int64, member string) error {
		v.Members = append(v.Members, fmt.Sprintf("%d %s", line, member))
		return nil
	}); err != nil {
		t.Errorf("%s: original members: %v", name, err)
	}
	return v
}

// TestByFileAsMoves proves that the log sorted on file, read a file at a
// time (the merge join undo makes with its sorted files), says of each
// file what the whole log held in memory says: its version, incomplete
// block (with the log's line number), live revisits (entries, lines and
// where they stand now), the version before the runs undone and the
// original members, for logs of several runs with restores, cut blocks,
// comments between lines and entries before any "# run" line, sorted in
// memory and by the system sort; and that a file the log does not name
// gets nothing.
func TestByFileAsMoves(t *testing.T) {
	dir := t.TempDir()
	for seed := range 40 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		log, orig := genLog(rng, seed%3 == 0)
		if seed%4 == 1 {
			log = log[bytes.IndexByte(log, '\n')+1:]
		}
		if seed%5 == 2 {
			// A comment somewhere: one that closes a block leaves it
			// incomplete, in the groups as in the log.
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
		s := syssort.Sorter{TempDir: dir}
		if seed%2 == 0 {
			s.InMemory = -1 // the system sort
		}
		g, err := SortByFile(context.Background(), name, s)
		if err != nil {
			t.Fatal(err)
		}
		files := []string{"0-not-named.warc.gz"}
		for n := range orig {
			files = append(files, manifest.EscapeFile(n))
		}
		files = append(files, "zz-not-named.warc.gz")
		slices.Sort(files)
		b, err := g.Open()
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			n, _ := manifest.UnescapeFile(file)
			m, err := b.For(file, nil)
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, n, err)
			}
			got, want := viewOf(t, m, n), viewOf(t, whole, n)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d: %s: by file %+v\nwhole log %+v", seed, n, got, want)
			}
			if strings.HasSuffix(n, "not-named.warc.gz") && got.Names {
				t.Errorf("seed %d: %s named", seed, n)
			}
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		g.Remove()
	}
}

// TestByFileErrors: what a file's group cannot see alone is an error of
// the sort, naming the log's line; an error of a line is named with the
// log's line number when its file is read.
func TestByFileErrors(t *testing.T) {
	cases := []struct {
		name, log, want string
		atRead          bool
	}{
		{"an entry in another file's block", "# run 2026-01-01T00:00:00Z\n# file a.warc 1000 aa 900 bb\nb.warc 0 200 0 100 revisit sha1:AAAA u d\n",
			"line 3: an entry of b.warc in the block of a.warc", false},
		{"files out of order", "# run 2026-01-01T00:00:00Z\nb.warc 0 200 0 100 revisit sha1:AAAA u d\na.warc 0 200 0 100 revisit sha1:AAAA u d\n",
			"line 3: a.warc after b.warc: files out of order", false},
		{"an entry that does not parse", "# run 2026-01-01T00:00:00Z\na.warc 0 200 0 100 revisit sha1:AAAA u d\n# run 2026-02-01T00:00:00Z\nb.warc 0 200 x 100 revisit sha1:AAAA u d\n",
			"line 4:", true},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(dir, "log")
			if err := os.WriteFile(name, []byte(c.log), 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := SortByFile(context.Background(), name, syssort.Sorter{TempDir: dir})
			if !c.atRead {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.Remove()
			b, _ := g.Open()
			_, err = b.For("b.warc", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
			b.Close()
		})
	}
}
