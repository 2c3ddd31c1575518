package reindex

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/rewritelog"
)

// The log of the tests: in a.warc.gz the record at 1000 (2000 bytes)
// became a revisit of 500 bytes; in b.warc (plain) the record at 0 became
// a revisit, and run 2 restored it. c/d.warc.gz and e/d.warc.gz share a
// base name.
const testLog = "# run 2026-01-01T00:00:00Z\n" +
	"a.warc.gz 1000 2000 1000 500 revisit sha1:NEWDIGEST http://a/ 2025-01-01T00:00:00Z\n" +
	"b.warc 0 3004 0 1004 revisit sha1:BDIGEST http://b/ 2025-01-01T00:00:00Z\n" +
	"c/d.warc.gz 0 10 0 5 revisit sha1:X u d\n" +
	"e/d.warc.gz 0 10 0 5 revisit sha1:X u d\n" +
	"# run 2026-02-01T00:00:00Z\n" +
	"b.warc 0 1004 0 3004 restored - - -\n"

type fakeRecords struct{ mime, digest string }

func (f fakeRecords) Fields(file string, off int64) (string, string, error) {
	if f.digest == "" {
		return "", "", errors.New("no such record")
	}
	return f.mime, f.digest, nil
}

func TestUpdate(t *testing.T) {
	cases := []struct {
		name    string
		log     string // testLog if empty
		since   time.Time
		records RecordSource
		lines   []string // earlier lines teach the digest spelling
		line    string
		want    string
		err     string
	}{
		{name: "warcio.js CDXJ: revisit",
			line: `a)/ 2025 {"url":"http://a/","mime":"text/html","status":"200","digest":"OLD","length":"2000","offset":"1000","filename":"a.warc.gz"}`,
			want: `a)/ 2025 {"url":"http://a/","mime":"warc/revisit","status":"200","digest":"NEWDIGEST","length":"500","offset":"1000","filename":"a.warc.gz"}`},
		{name: "cdxj-indexer CDXJ: the digest keeps its label",
			line: `a)/ 2025 {"url": "http://a/", "mime": "text/html", "status": "200", "digest": "sha1:OLD", "length": "2000", "offset": "1000", "filename": "a.warc.gz"}`,
			want: `a)/ 2025 {"url": "http://a/", "mime": "warc/revisit", "status": "200", "digest": "sha1:NEWDIGEST", "length": "500", "offset": "1000", "filename": "a.warc.gz"}`},
		{name: "a line without digest is spelt as the lines before it",
			lines: []string{`x)/ 2025 {"digest": "sha1:Q", "offset": "0", "filename": "other.warc.gz"}`},
			line:  `a)/ 2025 {"url": "http://a/", "length": "2000", "offset": "1000", "filename": "a.warc.gz"}`,
			want:  `a)/ 2025 {"url": "http://a/", "mime": "warc/revisit", "digest": "sha1:NEWDIGEST", "length": "500", "offset": "1000", "filename": "a.warc.gz"}`},
		{name: "CDX11, file named by absolute path",
			line: `a)/ 2025 http://a/ text/html 200 OLD - - 2000 1000 /data/a.warc.gz`,
			want: `a)/ 2025 http://a/ warc/revisit 200 NEWDIGEST - - 500 1000 /data/a.warc.gz`},
		{name: "a record after the rewrite moves",
			line: `a)/ 2025 http://a/ text/html 200 D - - 100 3000 a.warc.gz`,
			want: `a)/ 2025 http://a/ text/html 200 D - - 100 1500 a.warc.gz`},
		{name: "a record before the rewrite stays",
			line: `a)/ 2025 http://a/ text/html 200 D - - 100 500 a.warc.gz`,
			want: `a)/ 2025 http://a/ text/html 200 D - - 100 500 a.warc.gz`},
		{name: "another file passes",
			line: `a)/ 2025 http://a/ text/html 200 D - - 2000 1000 z.warc.gz`,
			want: `a)/ 2025 http://a/ text/html 200 D - - 2000 1000 z.warc.gz`},
		{name: "a range ending with the rewritten record is its line (warcio.js after dns:)",
			line: `a)/ 2025 http://a/ text/html 200 D - - 2300 700 a.warc.gz`,
			want: `a)/ 2025 http://a/ warc/revisit 200 NEWDIGEST - - 800 700 a.warc.gz`},
		{name: "a range over the start of a rewritten record that it does not end with",
			line: `a)/ 2025 http://a/ text/html 200 D - - 500 700 a.warc.gz`,
			err:  "holds the start of the record at 1000+2000 that log line 2"},
		{name: "an offset inside a rewritten record",
			line: `a)/ 2025 http://a/ text/html 200 D - - 100 1100 a.warc.gz`,
			err:  "offset 1100 falls inside the record at 1000+2000 that log line 2"},
		{name: "already a revisit: the index is newer than the log",
			line: `a)/ 2025 http://a/ warc/revisit 200 D - - 2000 1000 a.warc.gz`,
			err:  "already is one: was the index written after that run of the log? (--since)"},
		{name: "a gzip record of another length",
			line: `a)/ 2025 http://a/ text/html 200 D - - 1996 1000 a.warc.gz`,
			err:  "gives the record at 1000 length 1996, log line 2 2000"},
		{name: "plain: the indexer's length without CRLF CRLF, revisit then restored",
			line: `b)/ 2025 http://b/ text/html 200 D - - 3000 0 b.warc`,
			want: `b)/ 2025 http://b/ text/html 200 D - - 3000 0 b.warc`},
		{name: "only run 2 (--since): restoring a revisit the index has no response line of",
			since: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC),
			line:  `b)/ 2025 http://b/ warc/revisit 200 BDIGEST - - 1000 0 b.warc`,
			err:   "log line 7 restores the record at 0, whose line before its revisit the index does not have: give --root DIR"},
		{name: "the same, with the record read from the file",
			since:   time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC),
			records: fakeRecords{mime: "text/html", digest: "sha1:ORIG"},
			line:    `b)/ 2025 http://b/ warc/revisit 200 BDIGEST - - 1000 0 b.warc`,
			want:    `b)/ 2025 http://b/ text/html 200 ORIG - - 3000 0 b.warc`},
		{name: "restoring a record the index has as a response",
			since: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC),
			line:  `b)/ 2025 http://b/ text/html 200 D - - 1000 0 b.warc`,
			err:   "log line 7 restores the record at 0, but the index line is no revisit"},
		{name: "a base name two files of the log have",
			line: `d)/ 2025 http://d/ text/html 200 D - - 10 0 d.warc.gz`,
			err:  `file name "d.warc.gz": the log names 2 files of that name`},
		{name: "a five-field log: the digest stays",
			log:  "a.warc.gz 1000 2000 1000 500\n",
			line: `a)/ 2025 {"url":"http://a/","mime":"text/html","digest":"OLD","length":"2000","offset":"1000","filename":"a.warc.gz"}`,
			want: `a)/ 2025 {"url":"http://a/","mime":"warc/revisit","digest":"OLD","length":"500","offset":"1000","filename":"a.warc.gz"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := c.log
			if log == "" {
				log = testLog
			}
			moves, err := rewritelog.Load(rewritelog.NewReader(strings.NewReader(log), "log"), c.since)
			if err != nil {
				t.Fatal(err)
			}
			u := &Updater{Moves: moves, Records: c.records}
			input := strings.Join(append(c.lines, c.line), "\n") + "\n"
			r, err := cdx.NewReader(strings.NewReader(input), "index", cdx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var l *cdx.Line
			for range len(c.lines) + 1 {
				if l, err = r.Next(); err != nil {
					t.Fatal(err)
				}
				_, err = u.Update(l, "index")
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "index: line ") {
					t.Errorf("error %v, want one with %q", err, c.err)
				}
				if l.IsEdited() {
					t.Errorf("a line that failed was edited: %s", l.AppendTo(nil))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(l.AppendTo(nil)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestJob(t *testing.T) {
	moves, err := rewritelog.Load(rewritelog.NewReader(strings.NewReader(testLog), "log"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	index := strings.Join([]string{
		"!meta {}",
		`a)/ 2025 {"url":"http://a/","mime":"text/html","status":"200","digest":"OLD","length":"2000","offset":"1000","filename":"a.warc.gz"}`,
		`b)/ 2025 {"url":"http://b b/","offset":"0","filename":"a.warc.gz"}`,
		`c)/ 2025 {"url":"http://c/","offset":"4000","filename":"a.warc.gz"}`,
		"not an index line",
		`z)/ 2025 {"url":"http://z/","offset":"4000","filename":"z.warc.gz"}`,
	}, "\n") + "\n"
	var out, del, add bytes.Buffer
	var reported []string
	j := &Copy{Updater: Updater{Moves: moves}, Out: cdx.NewWriter(&out), Delete: cdx.NewWriter(&del), Add: cdx.NewWriter(&add),
		Report: func(err error) { reported = append(reported, err.Error()) }}
	if err := j.Index(strings.NewReader(index), "index"); err != nil {
		t.Fatal(err)
	}
	j.Finish()
	for _, w := range []*cdx.Writer{j.Out, j.Delete, j.Add} {
		w.Flush()
	}
	wantOut := strings.Join([]string{
		"!meta {}",
		`a)/ 2025 {"url":"http://a/","mime":"warc/revisit","status":"200","digest":"NEWDIGEST","length":"500","offset":"1000","filename":"a.warc.gz"}`,
		`b)/ 2025 {"url":"http://b b/","offset":"0","filename":"a.warc.gz"}`,
		`c)/ 2025 {"url":"http://c/","offset":"2500","filename":"a.warc.gz"}`,
		"not an index line",
		`z)/ 2025 {"url":"http://z/","offset":"4000","filename":"z.warc.gz"}`,
	}, "\n") + "\n"
	if out.String() != wantOut {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), wantOut)
	}
	wantDel := "a)/ 2025 http://a/ text/html 200 OLD - - 2000 1000 a.warc.gz\nc)/ 2025 http://c/ - - - - - - 4000 a.warc.gz\n"
	wantAdd := "a)/ 2025 http://a/ warc/revisit 200 NEWDIGEST - - 500 1000 a.warc.gz\nc)/ 2025 http://c/ - - - - - - 2500 a.warc.gz\n"
	if del.String() != wantDel || add.String() != wantAdd {
		t.Errorf("OutbackCDX delete:\n%s\nadd:\n%s", del.String(), add.String())
	}
	// The bad line, and b.warc's entries: the index has no line of it, so
	// they are not reported; nor are c/ and e/d.warc.gz's.
	if len(reported) != 1 || !strings.HasPrefix(reported[0], "index: line 5: ") || j.Problems != 1 {
		t.Errorf("reported %q", reported)
	}
	s := j.Stats
	if s.Lines != 6 || s.Records != 4 || s.Revisits != 1 || s.Moved != 1 || s.Unchanged != 1 || s.OtherFiles != 1 {
		t.Errorf("stats %+v", s)
	}

	// A log entry of a file the index has lines of, none at its offset.
	moves, _ = rewritelog.Load(rewritelog.NewReader(strings.NewReader(testLog), "log"), time.Time{})
	reported = nil
	j = &Copy{Updater: Updater{Moves: moves}, Out: cdx.NewWriter(&out), Report: func(err error) { reported = append(reported, err.Error()) }}
	j.Index(strings.NewReader(`c)/ 2025 {"url":"http://c/","offset":"4000","filename":"a.warc.gz"}`+"\n"), "index")
	if n := j.Finish(); n != 1 || len(reported) != 1 || !strings.Contains(reported[0], "log line 2: a.warc.gz: no index line at offset 1000") {
		t.Errorf("unmatched %d: %q", n, reported)
	}

	// --strict stops at the first problem.
	j = &Copy{Updater: Updater{Moves: moves}, Out: cdx.NewWriter(&out), Strict: true}
	if err := j.Index(strings.NewReader("not an index line\n"), "index"); err == nil {
		t.Error("strict: no error for a bad line")
	}
}
