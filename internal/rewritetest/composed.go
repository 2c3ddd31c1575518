package rewritetest

import (
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"warcdedup/rewritelog"
)

// ComposedLog reads a rewrite log and returns what its entries did
// together, one line a record rewritten, sorted: its file, its offset and
// length before the first replacement of the file the log holds, its
// offset and length after the last, and the entry's kind, digest,
// original and gzip member. A run that replaced a file twice (compare
// once: the rewrite, then the rewrite of the collisions) and one that
// replaced it once with the same revisits give the same lines.
func ComposedLog(t testing.TB, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rewritelog.NewReader(f, name)
	// Each file's replacements in the log's order, each its entries.
	var order []string
	blocks := map[string][][]rewritelog.Entry{}
	last := map[string]int{} // the run of each file's last replacement
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		bs := blocks[e.File]
		if bs == nil {
			order = append(order, e.File)
		}
		if n := len(bs); n == 0 || last[e.File] != e.Run || bs[n-1][len(bs[n-1])-1].OldOffset >= e.OldOffset {
			bs = append(bs, nil)
		}
		bs[len(bs)-1] = append(bs[len(bs)-1], *e)
		blocks[e.File], last[e.File] = bs, e.Run
	}
	var out []string
	for _, file := range order {
		bs := blocks[file]
		follow := make([]rewritelog.Block, len(bs))
		for i := range bs {
			follow[i] = rewritelog.NewBlock(bs[i])
		}
		for i, b := range bs {
			for _, e := range b {
				old := e.OldOffset
				for j := i - 1; j >= 0; j-- {
					if old, err = before(bs[j], old); err != nil {
						t.Fatalf("%s: %s offset %d: %v", name, file, e.OldOffset, err)
					}
				}
				now := e.NewOffset
				for j := i + 1; j < len(bs); j++ {
					if now, err = follow[j].Follow(now); err != nil {
						t.Fatalf("%s: %s offset %d: %v", name, file, e.NewOffset, err)
					}
				}
				out = append(out, fmt.Sprintf("%s %d %d %d %d %s %s %s %s %s", e.File, old, e.OldLength, now, e.NewLength,
					e.Kind, e.PayloadDigest, e.RefersToURI, e.RefersTo, e.OriginalMember))
			}
		}
	}
	slices.Sort(out)
	return out
}

// before is the offset in the file before a replacement (its entries) of
// the record at off after it.
func before(entries []rewritelog.Entry, off int64) (int64, error) {
	var shift int64
	for _, e := range entries {
		switch {
		case off == e.NewOffset:
			return e.OldOffset, nil
		case off < e.NewOffset:
			return off - shift, nil
		case off < e.NewOffset+e.NewLength:
			return 0, fmt.Errorf("inside the record the entry of line %d wrote", e.Line)
		}
		shift = e.NewOffset + e.NewLength - e.OldOffset - e.OldLength
	}
	return off - shift, nil
}
