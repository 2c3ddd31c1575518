package originals_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/source"
)

// usesFixture is a file holding one small original and a table of its
// kept line with dups duplicate lines naming it.
type usesFixture struct {
	dir  string
	line manifest.Line // the kept line
	dup  manifest.Line // a duplicate line naming it, if any
	tab  *manifest.Table
	o    *originals.Originals
}

func newUsesFixture(t testing.TB, dups int) *usesFixture {
	t.Helper()
	const payload = "a small original's payload"
	orig := warctest.Response("http://example.com/o", "2024-01-02T00:00:00Z", payload)
	sum := sha1.Sum([]byte(payload))
	kept := manifest.Line{File: "o.warc", Offset: 0, Length: int64(len(orig)), URI: "http://example.com/o",
		Date: "2024-01-02T00:00:00Z", Digest: digest.SHA1.Format(sum[:]), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
	text := kept.Append(nil)
	var dup manifest.Line
	for i := range dups {
		d := kept
		d.File, d.URI, d.Copy, d.RefURI, d.RefDate = "d.warc", fmt.Sprintf("http://example.com/d%d", i), i+2, kept.URI, kept.Date
		d.Offset = int64(i) * 1000
		text = d.Append(text)
		dup = d
	}
	tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "numbered.manifest")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	warctest.WriteFile(t, dir, "o.warc", []byte(orig))
	o, err := originals.New(&source.Locator{Roots: []string{dir}}, tab)
	if err != nil {
		t.Fatal(err)
	}
	return &usesFixture{dir: dir, line: kept, dup: dup, tab: tab, o: o}
}

// open opens the kept line's original (planned: through the Plan of a
// duplicate, as the rewrite does) and says whether its payload came in
// memory (not streamed); the payload read must be the original's.
func (f *usesFixture) open(t *testing.T, planned bool) (inMemory bool, err error) {
	t.Helper()
	l := f.line
	var orig *originals.Original
	var body io.ReadCloser
	if planned {
		p, perr := f.o.Plan(&f.dup)
		if perr != nil || p.Original == nil || *p.Original != f.line {
			t.Fatalf("Plan: %+v, %v; want the kept line", p, perr)
		}
		orig, body, err = f.o.OpenPlanned(context.Background(), p, policy.Replay, nil)
	} else {
		orig, body, err = f.o.Open(context.Background(), &l, policy.Replay, nil)
	}
	if err != nil {
		return false, err
	}
	p := orig.Payload
	if body != nil {
		p, err = io.ReadAll(body)
		body.Close()
		if err != nil {
			return false, err
		}
	}
	if string(p) != "a small original's payload" {
		t.Fatalf("payload %q", p)
	}
	return body == nil, nil
}

// usesCase is a table of one original and dups duplicates naming it, and
// what its reads give, the file removed after the first: "memory" (the
// payload in memory), "streamed", or "gone" (the read fails: nothing kept).
type usesCase struct {
	name string
	dups int
	want []string
}

// TestOpenKeepsWhatIsReadAgain proves that a small original opened
// through a duplicate's Plan (OpenPlanned, as the rewrite reads) is kept
// in memory for the reads the tables say are still to come, and only for
// them: the only duplicate of it streams it (no copy of its own), the
// last of several drops it (a read after that reads the file, here gone),
// and tables that list no duplicate (copy-1 and revisit lines only, as
// warcrefs may be given) keep it as before, until evicted. Open (undo's
// reads, which may hold one payload while opening another) keeps every
// small original in memory until evicted, as before, streaming none.
func TestOpenKeepsWhatIsReadAgain(t *testing.T) {
	tests := []usesCase{
		{"one duplicate: streamed", 1, []string{"streamed", "gone"}},
		{"two duplicates: kept for the second, dropped after it", 2, []string{"memory", "memory", "gone"}},
		{"three duplicates: kept for the last two", 3, []string{"memory", "memory", "memory", "gone"}},
		{"no duplicate listed: kept until evicted", 0, []string{"memory", "memory", "memory", "memory"}},
	}
	for _, tt := range tests {
		for _, planned := range []bool{false, true} {
			if planned && tt.dups == 0 {
				continue // no duplicate to plan for
			}
			t.Run(fmt.Sprintf("%s, planned %v", tt.name, planned), func(t *testing.T) { tt.run(t, planned) })
		}
	}
}

func (tt usesCase) run(t *testing.T, planned bool) {
	f := newUsesFixture(t, tt.dups)
	wants := tt.want
	if !planned {
		wants = []string{"memory", "memory", "memory"}
	}
	for i, want := range wants {
		mem, err := f.open(t, planned)
		got := "streamed"
		switch {
		case err != nil:
			got = "gone"
		case mem:
			got = "memory"
		}
		if got != want {
			t.Fatalf("read %d: %s (%v), want %s", i+1, got, err, want)
		}
		if i == 0 {
			if err := os.Remove(filepath.Join(f.dir, "o.warc")); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkOpenSmallOriginal measures the reads of a small original:
// named by one duplicate, each read streams it into the caller's buffer;
// named by two, a read copies it into memory and the next takes it from
// there (then drops it, so the next copies it again).
func BenchmarkOpenSmallOriginal(b *testing.B) {
	for _, dups := range []int{1, 2} {
		b.Run(fmt.Sprintf("dups-%d", dups), func(b *testing.B) {
			f := newUsesFixture(b, dups)
			buf := make([]byte, 64<<10)
			p, err := f.o.Plan(&f.dup)
			if err != nil {
				b.Fatal(err)
			}
			streamed := 0
			for b.Loop() {
				_, body, err := f.o.OpenPlanned(context.Background(), p, policy.Replay, nil)
				if err != nil {
					b.Fatal(err)
				}
				if body != nil {
					streamed++
					if _, err := io.ReadFull(body, buf); err != io.ErrUnexpectedEOF {
						b.Fatal(err)
					}
					body.Close()
				}
			}
			if dups == 1 && streamed == 0 {
				b.Fatal("the only duplicate's original was never streamed")
			}
		})
	}
}
