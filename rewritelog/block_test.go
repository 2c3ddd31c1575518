package rewritelog

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run's blocks: a.warc 1000 -> 700 bytes by two revisits, b.warc 500 ->
// 450 by one.
const wholeLog = "# run 2026-01-01T00:00:00Z\n" +
	"# file a.warc 1000 aa 700 bb\n" +
	"a.warc 100 200 100 100 revisit sha1:AAAA u d\n" +
	"a.warc 500 300 400 100 revisit sha1:BBBB u d\n" +
	"# file b.warc 500 cc 450 dd\n" +
	"b.warc 0 100 0 50 revisit sha1:CCCC u d\n"

// TestIncompleteBlock proves that a block whose entries do not account for
// its file's change of size is found wherever the log is cut at a line
// boundary inside it, by the Reader (an error naming the log and the
// "# file" line) and by Moves (the file's Live fails, the others' do not).
func TestIncompleteBlock(t *testing.T) {
	lines := strings.SplitAfter(wholeLog, "\n")
	cases := []struct {
		name, log, file string
		line            int64 // of the incomplete block's "# file" line; 0: whole
	}{
		{"whole", wholeLog, "", 0},
		{"cut after a's first entry", strings.Join(lines[:3], ""), "a.warc", 2},
		{"cut after a's \"# file\" line", strings.Join(lines[:2], ""), "a.warc", 2},
		{"cut after b's \"# file\" line", strings.Join(lines[:5], ""), "b.warc", 5},
		{"a's second entry missing, b whole", strings.Join(append(lines[:3:3], lines[4:]...), ""), "a.warc", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(c.log), "log")
			var err error
			for err == nil {
				_, err = r.Next()
			}
			var ie *IncompleteError
			switch {
			case c.line == 0 && err != io.EOF:
				t.Errorf("Reader: %v, want none", err)
			case c.line != 0 && (!errors.As(err, &ie) || ie.Line != c.line || ie.Fixity.File != c.file):
				t.Errorf("Reader: %v, want the block of %s at line %d incomplete", err, c.file, c.line)
			}
			m, err := Load(NewReader(strings.NewReader(c.log), "log"), time.Time{})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, name := range []string{"a.warc", "b.warc"} {
				f := m.Lookup(name)
				if f == nil {
					continue
				}
				err := m.Live(f, func(Move, int64) error { return nil })
				_, _, ferr := m.Follow(f, 0, -1, nil)
				if want := name == c.file; (err != nil) != want || (ferr != nil) != want || (m.Incomplete(name) != nil) != want {
					t.Errorf("%s: Live %v, Follow %v, Incomplete %v; want an error: %v", name, err, ferr, m.Incomplete(name), want)
				}
			}
		})
	}
}

// TestIncompleteBlockBeforeSince: a block missing entries in a run before
// those kept does not stop following the later runs.
func TestIncompleteBlockBeforeSince(t *testing.T) {
	lines := strings.SplitAfter(wholeLog, "\n")
	log := strings.Join(lines[:3], "") + "# run 2026-02-01T00:00:00Z\n# file a.warc 900 ee 800 ff\na.warc 0 200 0 100 revisit sha1:EEEE u d\n"
	m, err := Load(NewReader(strings.NewReader(log), "log"), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if off, _, err := m.Follow(m.Lookup("a.warc"), 500, -1, nil); err != nil || off != 400 {
		t.Errorf("Follow: %d, %v; want 400", off, err)
	}
	if m, err = Load(NewReader(strings.NewReader(log), "log"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Follow(m.Lookup("a.warc"), 500, -1, nil); err == nil {
		t.Error("Follow through every run, the first block incomplete: no error")
	}
}

// TestEntryInAnotherFilesBlock: an entry of one file after another's
// "# file" line is an error.
func TestEntryInAnotherFilesBlock(t *testing.T) {
	log := "# file a.warc 1000 aa 900 bb\nb.warc 0 200 0 100 revisit sha1:AAAA u d\n"
	r := NewReader(strings.NewReader(log), "log")
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "an entry of b.warc in the block of a.warc") {
		t.Errorf("error %v", err)
	}
}

// TestVersion: a file's version is its last replacement's "# file" line,
// a dry run's left out.
func TestVersion(t *testing.T) {
	log := wholeLog + "# run 2026-02-01T00:00:00Z\n" +
		"# file a.warc 700 bb 800 ee\na.warc 100 100 100 200 restored - - -\n" +
		"# run 2026-03-01T00:00:00Z\n" +
		"# file b.warc 450 dd 400 -\nb.warc 100 100 100 50 revisit sha1:DDDD u d\n"
	m, err := Load(NewReader(strings.NewReader(log), "log"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.warc": "ee", "b.warc": "dd"} {
		if v, ok := m.Version(name); !ok || v.NewSum != want {
			t.Errorf("%s: version %+v %v, want SHA-256 %s", name, v, ok, want)
		}
	}
	if _, ok := m.Version("c.warc"); ok {
		t.Error("a version of a file the log does not name")
	}
}

// TestShortLog: a log shorter than its EndFile records is refused by
// LoadFile and LoadFileFrom, whatever the cut; as long or longer it loads.
func TestShortLog(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "rewrite.log")
	if err := os.WriteFile(name, []byte(wholeLog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteEnd(name, int64(len(wholeLog))); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(name, time.Time{}); err != nil {
		t.Fatalf("the whole log: %v", err)
	}
	cut := strings.Index(wholeLog, "# file b.warc") // between two blocks: whole by its own lights
	if err := os.WriteFile(name, []byte(wholeLog[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	var se *ShortError
	if _, err := LoadFile(name, time.Time{}); !errors.As(err, &se) || se.Size != int64(cut) || se.Want != int64(len(wholeLog)) {
		t.Errorf("LoadFile of the cut log: %v, want a *ShortError", err)
	}
	if _, err := LoadFileFrom(name, 0); !errors.As(err, &se) {
		t.Errorf("LoadFileFrom of the cut log: %v, want a *ShortError", err)
	}
	if err := os.WriteFile(name, []byte(wholeLog+"# run 2026-05-01T00:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(name, time.Time{}); err != nil {
		t.Errorf("a log grown since: %v", err)
	}
	// An empty file (a writer killed between making it and writing the
	// first size) records no size.
	if err := os.WriteFile(EndFile(name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := ReadEnd(name); ok || err != nil {
		t.Errorf("ReadEnd of an empty %s: %d %v %v, want no size and no error", EndFile(name), got, ok, err)
	}
	// The size is written in place, shorter or longer, and read back.
	for _, n := range []int64{7, 123456789, 0} {
		if err := WriteEnd(name, n); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := ReadEnd(name); got != n || !ok || err != nil {
			t.Errorf("ReadEnd after WriteEnd(%d): %d %v %v", n, got, ok, err)
		}
	}
}
