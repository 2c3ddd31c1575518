package rewritelog

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReaderErrors(t *testing.T) {
	cases := []struct{ name, log, want string }{
		{"fields", "a.warc 1 2 3\n", "log: line 1: 4 fields"},
		{"number", "a.warc 1 x 1 1\n", `log: line 1: field 3 "x"`},
		{"kind", "a.warc 0 10 0 5 moved sha1:X u d\n", `kind "moved"`},
		{"revisit without digest", "a.warc 0 10 0 5 revisit - u d\n", "needs its payload digest"},
		{"restored with digest", "a.warc 0 10 0 5 restored sha1:X - -\n", `"-" for digest`},
		{"files out of order", "b.warc 0 10 0 5 revisit d u t\na.warc 0 10 0 5 revisit d u t\n", "line 2: a.warc after b.warc"},
		{"offsets out of order", "a.warc 100 10 100 5 revisit d u t\na.warc 50 10 45 5 revisit d u t\n", "line 2: old offset 50 before the end (110)"},
		{"overlap", "a.warc 100 10 100 5 revisit d u t\na.warc 105 10 100 5 revisit d u t\n", "line 2: old offset 105"},
		{"new offset does not add up", "a.warc 100 10 100 5 revisit d u t\na.warc 200 10 200 5 revisit d u t\n", "line 2: new offset 200: the entries before it in this run moved offset 200 to 195"},
		{"run time", "# run yesterday\n", "line 1: run time"},
		{"escape", "a%2.warc 0 10 0 5\n", "bad %-escape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(c.log), "log")
			var err error
			for err == nil {
				_, err = r.Next()
			}
			if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

func TestReader(t *testing.T) {
	log := "# a comment\n" +
		"# run 2026-01-02T03:04:05Z\n" +
		"a%20b.warc.gz 100 1000 100 400 revisit sha1:AAAA http://x/%20y 2026-01-01T00:00:00Z\n" +
		"a%20b.warc.gz 2000 500 1400 100 revisit sha1:BBBB http://x/ 2026-01-01T00:00:00Z\n" +
		"c.warc 0 10 0 5\n" +
		"# run 2026-02-02T03:04:05Z\n" +
		"a%20b.warc.gz 100 400 100 1000 restored - - -\n"
	r := NewReader(strings.NewReader(log), "log")
	var got []Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *e)
	}
	if len(got) != 4 || len(r.Runs) != 2 || !r.Legacy() {
		t.Fatalf("%d entries, %d runs, legacy %v", len(got), len(r.Runs), r.Legacy())
	}
	want := Entry{File: "a b.warc.gz", OldOffset: 100, OldLength: 1000, NewOffset: 100, NewLength: 400, Kind: Revisit,
		PayloadDigest: "sha1:AAAA", RefersToURI: "http://x/%20y", RefersTo: "2026-01-01T00:00:00Z", Run: 0, Line: 3}
	if got[0] != want {
		t.Errorf("got  %+v\nwant %+v", got[0], want)
	}
	if e := got[3]; e.Kind != Restored || e.Run != 1 || e.PayloadDigest != "" {
		t.Errorf("restored entry %+v", e)
	}
	// Written back, the lines read the same.
	for i, line := range []string{strings.Split(log, "\n")[2], strings.Split(log, "\n")[6]} {
		e := got[[]int{0, 3}[i]]
		if s := string(e.AppendTo(nil)); s != line {
			t.Errorf("written %q, read %q", s, line)
		}
	}
	if s := string(AppendRun(nil, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))); s != "# run 2026-01-02T03:04:05Z" {
		t.Errorf("run line %q", s)
	}
}

func loadLog(t *testing.T, log string, since time.Time) *Moves {
	t.Helper()
	m, err := Load(NewReader(strings.NewReader(log), "log"), since)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFollow(t *testing.T) {
	// Run 1 shrinks the records at 100 (by 600) and 2000 (by 400); run 2
	// restores the first and shrinks the record that was at 3000.
	log := "# run 2026-01-01T00:00:00Z\n" +
		"dir/a.warc.gz 100 1000 100 400 revisit sha1:AAAA u d\n" +
		"dir/a.warc.gz 2000 500 1400 100 revisit sha1:BBBB u d\n" +
		"# run 2026-02-01T00:00:00Z\n" +
		"dir/a.warc.gz 100 400 100 1000 restored - - -\n" +
		"dir/a.warc.gz 2000 300 2600 100 revisit sha1:CCCC u d\n"
	cases := []struct {
		name  string
		since time.Time
		off   int64
		want  int64
		hits  string // kinds and digests of the entries that rewrote it
		err   string
	}{
		{"before every entry", time.Time{}, 0, 0, "", ""},
		{"rewritten, then restored", time.Time{}, 100, 100, "revisit sha1:AAAA, restored , ", ""},
		{"between: shifted by run 1, back by run 2", time.Time{}, 1500, 1500, "", ""},
		{"rewritten in run 1, shifted back in run 2", time.Time{}, 2000, 2000, "revisit sha1:BBBB, ", ""},
		{"after both, rewritten in run 2", time.Time{}, 3000, 2600, "revisit sha1:CCCC, ", ""},
		{"after everything", time.Time{}, 9000, 8400, "", ""},
		{"inside a rewritten record", time.Time{}, 150, 0, "", "offset 150 falls inside the record at 100+1000 that log line 2"},
		{"only run 2 (--since)", time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), 100, 100, "restored , ", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadLog(t, log, c.since)
			f, err := m.Resolve([]byte("a.warc.gz"))
			if err != nil || f == nil {
				t.Fatal(f, err)
			}
			var hits string
			got, _, err := m.Follow(f, c.off, -1, func(mv Move, _, _ int64) error {
				hits += mv.Kind.String() + " " + string(mv.PayloadDigest) + ", "
				return nil
			})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want || hits != c.hits {
				t.Errorf("offset %d, hits %q, error %v; want %d, %q", got, hits, err, c.want, c.hits)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	log := "a/x.warc.gz 0 10 0 5\nb/x.warc.gz 0 10 0 5\nb/y.warc.gz 0 10 0 5\nz.warc 0 10 0 5\n"
	m := loadLog(t, log, time.Time{})
	cases := []struct{ name, want, err string }{
		{"a/x.warc.gz", "a/x.warc.gz", ""},
		{"/data/coll/b/x.warc.gz", "b/x.warc.gz", ""},
		{"http://store/warcs/b/y.warc.gz", "b/y.warc.gz", ""},
		{"y.warc.gz", "b/y.warc.gz", ""},
		{"z.warc", "z.warc", ""},
		{"/elsewhere/z.warc", "z.warc", ""},
		{"x.warc.gz", "", "the log names 2 files"},
		{"other.warc.gz", "", ""},
	}
	for _, c := range cases {
		for range 2 { // the second time from the cache
			f, err := m.Resolve([]byte(c.name))
			var got string
			if f != nil {
				got = f.Name
			}
			if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: resolved to %q, error %v; want %q, %q", c.name, got, err, c.want, c.err)
			}
		}
	}
}

func TestUnmatched(t *testing.T) {
	log := "a.warc 0 10 0 5\na.warc 100 10 95 5\nb.warc 0 10 0 5\n"
	m := loadLog(t, log, time.Time{})
	a, _ := m.Resolve([]byte("a.warc"))
	a.Lines++
	if _, _, err := m.Follow(a, 100, -1, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	m.Unmatched(func(f *File, mv Move) { got = append(got, f.Name+" "+string(rune('0'+mv.Line))) })
	if len(got) != 1 || got[0] != "a.warc 1" {
		t.Errorf("unmatched %v, want a.warc's line 1 only (b.warc has no lines)", got)
	}
}

// TestDigestKept: a base32 sha1 digest (held as 20 bytes) and any other
// (held as text) come back as written.
func TestDigestKept(t *testing.T) {
	for _, d := range []string{"sha1:2ZD2IYWV3YOKUTLTUXTLIZNLKESMDTO4", "sha1:2zd2iywv3yokutltuxtliznlkesmdto4", "sha256:abc", "md5:0123"} {
		m := loadLog(t, "a.warc 0 10 0 5 revisit "+d+" u t\n", time.Time{})
		f, _ := m.Resolve([]byte("a.warc"))
		var got string
		m.Follow(f, 0, -1, func(mv Move, _, _ int64) error { got = string(mv.PayloadDigest); return nil })
		if got != d {
			t.Errorf("digest %s came back as %s", d, got)
		}
	}
}

// TestLive lists the revisits a log's runs wrote and no later run undid,
// where each stands now: one restored by run 2, one moved by run 2's
// restoring, one written by run 3; and a log whose later run rewrote a
// range inside a revisit is an error.
func TestLive(t *testing.T) {
	log := "# run 2026-01-01T00:00:00Z\n" +
		"a.warc 100 1000 100 300 revisit sha1:AAAA u d\n" +
		"a.warc 2000 500 1300 200 revisit sha1:BBBB u d\n" +
		"b.warc 0 100 0 50 revisit sha1:DDDD u d\n" +
		"# run 2026-02-01T00:00:00Z\n" +
		"a.warc 100 300 100 1000 restored - - -\n" +
		"# run 2026-03-01T00:00:00Z\n" +
		"a.warc 3000 400 3000 100 revisit sha1:CCCC u d\n"
	cases := []struct {
		log, file, want string
		err             string
	}{
		{log, "a.warc", "sha1:BBBB@2000 sha1:CCCC@3000 ", ""},
		{log, "b.warc", "sha1:DDDD@0 ", ""},
		{log + "# run 2026-04-01T00:00:00Z\nb.warc 10 20 10 5 revisit sha1:EEEE u d\n", "b.warc", "", "holds the start of the record at 10+20"},
	}
	for _, c := range cases {
		m := loadLog(t, c.log, time.Time{})
		var got string
		err := m.Live(m.Lookup(c.file), func(mv Move, off int64) error {
			got += fmt.Sprintf("%s@%d ", mv.PayloadDigest, off)
			return nil
		})
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.file, err, c.err)
			}
		case err != nil || got != c.want:
			t.Errorf("%s: live %q, %v; want %q", c.file, got, err, c.want)
		}
	}
}

// TestLiveConcurrent proves that the restores of several files may read
// one Moves at once, and keep the Moves they are given: each keeps the
// digest its entry logged (a digest spelt out in a shared buffer was
// overwritten by the other file's, and undo refused files whose log "was
// not theirs"). Run with -race, it also finds the data race.
func TestLiveConcurrent(t *testing.T) {
	digests := []string{"sha1:2ZD2IYWV3YOKUTLTUXTLIZNLKESMDTO4", "sha1:4SKVIGCWFB2I2XMXP5JJG6LGBOS4DWOF",
		"sha1:LCUXOAWLQG3MMIW5EOTSCJXQXU72JVKC", "sha1:NIHNQPOLFMJ4DCLNBE4OYJMGRURYEUU5"}
	var log strings.Builder
	log.WriteString("# run 2026-01-01T00:00:00Z\n")
	files := []string{"a.warc", "b.warc"}
	for _, f := range files {
		for i := range 200 {
			fmt.Fprintf(&log, "%s %d 1000 %d 100 revisit %s u d\n", f, i*1000, i*100, digests[(i+len(f))%len(digests)])
		}
	}
	m := loadLog(t, log.String(), time.Time{})
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kept []Move
			err := m.Live(m.Lookup(f), func(mv Move, _ int64) error {
				kept = append(kept, mv)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			for i, mv := range kept {
				if want := digests[(i+len(f))%len(digests)]; string(mv.PayloadDigest) != want {
					t.Errorf("%s: entry %d kept digest %s, logged %s", f, i, mv.PayloadDigest, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
