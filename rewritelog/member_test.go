package rewritelog

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/gzmember"
)

// memberOf returns the text form of the description of a gzip member of
// n bytes of text, and the member's length.
func memberOf(t *testing.T, n int) (string, int64) {
	t.Helper()
	desc, length, err := describeMember(n)
	if err != nil {
		t.Fatal(err)
	}
	return desc, length
}

// describeMember is memberOf without a test to fail.
func describeMember(n int) (string, int64, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	var text bytes.Buffer
	for i := 0; text.Len() < n; i++ {
		fmt.Fprintf(&text, "WARC-Record-ID: <urn:uuid:%d-%d>\r\n", i*7919%10007, i*i)
	}
	zw.Write(text.Bytes()[:n])
	zw.Close()
	d := gzmember.NewDescriber(int64(b.Len()))
	d.Write(b.Bytes())
	desc, err := d.Description()
	if err != nil {
		return "", 0, err
	}
	return desc.String(), int64(b.Len()), nil
}

// TestOriginalMemberField: a revisit entry's tenth field is read, written
// back as it was, and checked: a description that does not parse, or of
// a member of another length than the entry's old length, or a tenth
// field on a restored entry, is an error naming the log and the line.
func TestOriginalMemberField(t *testing.T) {
	member, n := memberOf(t, 5000)
	other, _ := memberOf(t, 100)
	line := fmt.Sprintf("a.warc.gz 100 %d 100 50 revisit sha1:AAAA http://x/ 2026-01-01T00:00:00Z %s", n, member)
	r := NewReader(strings.NewReader("# run 2026-01-02T03:04:05Z\n"+line+"\n"), "log")
	e, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if e.OriginalMember != member || e.Line != 2 {
		t.Fatalf("entry %+v", e)
	}
	if got := string(e.AppendTo(nil)); got != line {
		t.Errorf("written back as %q, read %q", got, line)
	}
	dashed := fmt.Sprintf("a.warc.gz 100 %d 100 50 revisit sha1:AAAA http://x/ 2026-01-01T00:00:00Z -", n)
	if e, err := ParseEntry([]byte(dashed)); err != nil || e.OriginalMember != "" {
		t.Errorf("\"-\" as field 10: %+v, %v", e, err)
	}
	if e, err := ParseEntry([]byte("a.warc.gz 100 400 100 1000 restored - - - -")); err != nil || e.Kind != Restored {
		t.Errorf("a restored entry with \"-\" as field 10: %+v, %v", e, err)
	}

	garbled := []struct{ name, field, want string }{
		{"not a description", "hello", `line 2: field 10 (original-member): gzip member description "hello": form`},
		{"another form", "gz9." + member[len("gz2."):], "line 2: field 10 (original-member)"},
		{"cut short", member[:len(member)-3], "line 2: field 10 (original-member)"},
		{"bad base64", member[:len(member)-1] + "!", "line 2: field 10 (original-member)"},
		{"another member's length", other, fmt.Sprintf("line 2: field 10 (original-member) describes a member of %d bytes, and the entry's old length is %d", mustParse(t, other).Length, n)},
	}
	for _, c := range garbled {
		t.Run(c.name, func(t *testing.T) {
			text := fmt.Sprintf("# run 2026-01-02T03:04:05Z\na.warc.gz 100 %d 100 50 revisit sha1:AAAA http://x/ 2026-01-01T00:00:00Z %s\n", n, c.field)
			_, err := NewReader(strings.NewReader(text), "coll.warcdedup/rewrite.log").Next()
			if err == nil || !strings.Contains(err.Error(), "coll.warcdedup/rewrite.log: "+c.want) {
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
	restored := fmt.Sprintf("a.warc.gz 100 400 100 %d restored - - - %s", n, member)
	if _, err := ParseEntry([]byte(restored)); err == nil || !strings.Contains(err.Error(), "restored record has \"-\"") {
		t.Errorf("a restored entry with a member: %v", err)
	}
	if _, err := ParseEntry([]byte(line + " -")); err == nil || !strings.Contains(err.Error(), "more than 10 fields") {
		t.Errorf("11 fields: %v", err)
	}
}

func mustParse(t *testing.T, s string) gzmember.Description {
	t.Helper()
	d, err := gzmember.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOriginalMembers: Moves holds no original member, and reads those
// asked for again from the log, as loaded from a string, a file, or a
// file from an offset on; a log changed since it was loaded is an error.
func TestOriginalMembers(t *testing.T) {
	m1, n1 := memberOf(t, 5000)
	m2, n2 := memberOf(t, 7000)
	m3, n3 := memberOf(t, 9000)
	head := "# run 2026-01-01T00:00:00Z\nb.warc 0 10 0 5 revisit sha1:X u d\n" // another file's entry before
	log := head +
		"# run 2026-02-01T00:00:00Z\n" +
		fmt.Sprintf("# file a.warc.gz %d %s %d %s\n", 100000, strings.Repeat("1", 64), 100000-(n1-300)-(n2-300)-200, strings.Repeat("2", 64)) +
		fmt.Sprintf("a.warc.gz 100 %d 100 300 revisit sha1:AAAA u d %s\n", n1, m1) +
		fmt.Sprintf("a.warc.gz 20000 %d %d 300 revisit sha1:BBBB u d %s\n", n2, 20000-(n1-300), m2) +
		fmt.Sprintf("a.warc.gz 40000 500 %d 300 revisit sha1:CCCC u d\n", 40000-(n1-300)-(n2-300)) +
		"# run 2026-03-01T00:00:00Z\n" +
		fmt.Sprintf("a.warc.gz 50000 %d 50000 300 revisit sha1:DDDD u d %s\n", n3, m3)
	lines := map[string]int64{m1: 5, m2: 6, m3: 9}
	dir := t.TempDir()
	name := filepath.Join(dir, "rewrite.log")
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	loads := []struct {
		name string
		load func() (*Moves, error)
		want []string // the members it reads, in order
		skip int64    // lines before what it reads (line numbers start after them)
	}{
		{"string", func() (*Moves, error) { return Load(NewReader(strings.NewReader(log), "log"), time.Time{}) }, []string{m1, m2, m3}, 0},
		{"file", func() (*Moves, error) { return LoadFile(name, time.Time{}) }, []string{m1, m2, m3}, 0},
		{"file from an offset", func() (*Moves, error) { return LoadFileFrom(name, int64(len(head))) }, []string{m1, m2, m3}, 2},
		{"runs since", func() (*Moves, error) { return LoadFile(name, time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC)) }, []string{m3}, 0},
	}
	for _, c := range loads {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.load()
			if err != nil {
				t.Fatal(err)
			}
			f := m.Lookup("a.warc.gz")
			var want []int64
			err = m.Live(f, func(mv Move, _ int64) error {
				if mv.Member {
					want = append(want, mv.Line)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			err = m.OriginalMembers(f, want, func(line int64, member string) error {
				if lines[member]-c.skip != line {
					t.Errorf("line %d: the member of line %d", line, lines[member])
				}
				got = append(got, member)
				return nil
			})
			if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("members %d, %v; want %d", len(got), err, len(c.want))
			}
			// Only the lines asked for.
			got = nil
			m.OriginalMembers(f, []int64{6 - c.skip}, func(_ int64, member string) error { got = append(got, member); return nil })
			if len(c.want) == 3 && (len(got) != 1 || got[0] != m2) {
				t.Errorf("asked for line 6: %d members", len(got))
			}
		})
	}
	t.Run("changed", func(t *testing.T) {
		m, err := LoadFile(name, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(log, "a.warc.gz 20000", "a.warc.gz 20001", 1)
		if err := os.WriteFile(name, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		err = m.OriginalMembers(m.Lookup("a.warc.gz"), []int64{5, 6, 9}, func(int64, string) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "line 6 is not the entry read there before: the log changed") {
			t.Errorf("error %v", err)
		}
	})
}

// TestUndone: the version of a file before the runs the last undo of it
// restored, and whether nothing else changed it between.
func TestUndone(t *testing.T) {
	sum := func(c byte) string { return strings.Repeat(string(c), 64) }
	block := func(run string, old byte, oldSize int64, newSum byte, newSize int64, entry string) string {
		return "# run " + run + "\n" + fmt.Sprintf("# file a.warc %d %s %d %s\n", oldSize, sum(old), newSize, sum(newSum)) + entry + "\n"
	}
	run1 := block("2026-01-01T00:00:00Z", 'a', 1000, 'b', 900, "a.warc 100 200 100 100 revisit sha1:A u d")
	run2 := block("2026-02-01T00:00:00Z", 'b', 900, 'c', 800, "a.warc 500 200 500 100 revisit sha1:B u d")
	undo12 := block("2026-03-01T00:00:00Z", 'c', 800, 'd', 1000, "a.warc 100 100 100 200 restored - - -\na.warc 500 100 600 200 restored - - -")
	undo1 := block("2026-03-01T00:00:00Z", 'b', 900, 'd', 1000, "a.warc 100 100 100 200 restored - - -")
	run3 := block("2026-04-01T00:00:00Z", 'd', 1000, 'e', 900, "a.warc 100 200 100 100 revisit sha1:A u d")
	undo3 := block("2026-05-01T00:00:00Z", 'e', 900, 'f', 1000, "a.warc 100 100 100 200 restored - - -")
	elsewhere := block("2026-04-01T00:00:00Z", 'x', 1000, 'e', 900, "a.warc 100 200 100 100 revisit sha1:A u d")
	cases := []struct {
		name         string
		log          string
		ok, unbroken bool
		old          byte
		restores     int
	}{
		{"two runs, one undo", run1 + run2 + undo12, true, true, 'a', 1},
		{"run, undo", run1 + undo1, true, true, 'a', 1},
		{"run, undo, run, undo: the second run", run1 + undo1 + run3 + undo3, true, true, 'd', 1},
		{"not undone", run1 + run2, false, false, 0, 0},
		{"changed between two runs", run1 + strings.Replace(run2, "# file a.warc 900 "+sum('b'), "# file a.warc 900 "+sum('z'), 1) + undo12, true, false, 'a', 1},
		{"changed before the run, after the undo", run1 + undo1 + elsewhere + undo3, true, true, 'x', 1},
		{"restored in two replacements", run1 + run2 + block("2026-03-01T00:00:00Z", 'c', 800, 'g', 900, "a.warc 500 100 500 200 restored - - -") +
			block("2026-03-02T00:00:00Z", 'g', 900, 'd', 1000, "a.warc 100 100 100 200 restored - - -"), true, true, 'a', 2},
		{"no \"# file\" lines", "a.warc 100 200 100 100 revisit sha1:A u d\n# run 2026-03-01T00:00:00Z\na.warc 100 100 100 200 restored - - -\n", false, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadLog(t, c.log, time.Time{})
			u, ok := m.Undone("a.warc")
			if ok != c.ok || u.Unbroken != c.unbroken || u.Restores != c.restores || ok && u.Before.OldSum != sum(c.old) {
				t.Errorf("%+v, ok %v; want %c, unbroken %v, %d restores, ok %v", u, ok, c.old, c.unbroken, c.restores, c.ok)
			}
		})
	}
}
