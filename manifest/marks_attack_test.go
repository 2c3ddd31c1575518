package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// marksCase is a table's shape: its digests, how many lines each has and
// how long their URIs are, and the marks' spacing and cap.
type marksCase struct {
	name      string
	digests   int
	perDigest func(i int) int
	uriLen    func(r *rand.Rand) int
	every     int64
	max       int
}

// TestTableFindAtEveryMark proves that Find gives every line of a key and
// only those, in table order, whatever the marks: a key's lines spanning
// one or many marks, lines longer than a mark's spacing, the probe window
// and the read buffer, tables of no line and of one, marks every byte,
// every 4 KiB (b02ca7c's spacing, reverted: the default is 64 KiB),
// thinned at a cap of 2 or 3, and keys before the first line, between
// two and after the last.
func TestTableFindAtEveryMark(t *testing.T) {
	short := func(r *rand.Rand) int { return 10 + r.IntN(60) }
	mixed := func(r *rand.Rand) int {
		if r.IntN(10) == 0 {
			return 1000 + r.IntN(12000) // over probeWindow, scanBelow, scanBuffer
		}
		return 10 + r.IntN(200)
	}
	one := func(int) int { return 1 }
	runs := func(i int) int { return 1 + (i*7919)%23 }
	tests := []marksCase{
		{"no line", 0, one, short, 4 << 10, 1 << 16},
		{"one line", 1, one, short, 4 << 10, 1 << 16},
		{"one line, marks every byte", 1, one, short, 1, 1 << 16},
		{"one key of many lines over many marks", 1, func(int) int { return 400 }, short, 4 << 10, 1 << 16},
		{"runs, marks every 4 KiB", 300, runs, short, 4 << 10, 1 << 16},
		{"runs, long lines, marks every 4 KiB", 200, runs, mixed, 4 << 10, 1 << 16},
		{"runs, marks every byte", 200, runs, mixed, 1, 1 << 16},
		{"runs, marks every 100 bytes, cap 2", 300, runs, mixed, 100, 2},
		{"runs, marks every 100 bytes, cap 3", 300, runs, short, 100, 3},
		{"runs, marks every 64 bytes, cap just above the lines", 300, one, short, 64, 301},
		{"runs, marks every 64 bytes, cap just below the lines", 300, one, short, 64, 299},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func (tt marksCase) run(t *testing.T) {
	defer func(every int64, max int) { markEvery, maxMarks = every, max }(markEvery, maxMarks)
	markEvery, maxMarks = tt.every, tt.max
	r := rand.New(rand.NewPCG(uint64(tt.digests), 9))
	var b bytes.Buffer
	want := map[string][]string{}
	key := func(i int) string { return fmt.Sprintf("md5:%032x", 2*i+1) } // even values fall between
	for i := range tt.digests {
		for c := range tt.perDigest(i) {
			l := Line{File: fmt.Sprintf("d%d.warc", r.IntN(1000)), Offset: int64(c), Length: 1, URI: "http://h/" + strings.Repeat("u", tt.uriLen(r)), Date: "d", Digest: key(i), Fields: 6}
			text := l.Append(nil)
			b.Write(text)
			want[key(i)] = append(want[key(i)], string(text[:len(text)-1]))
		}
	}
	data := b.Bytes()
	tab, err := NewTable(bytes.NewReader(data), int64(len(data)), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.marks) >= max(tt.max, 2) {
		t.Errorf("%d marks, cap %d", len(tab.marks), tt.max)
	}
	for i := -1; i <= 2*tt.digests+1; i++ {
		k := fmt.Sprintf("md5:%032x", max(i, 0))
		if i < 0 {
			k = "a" // before every digest
		}
		var got []string
		if err := tab.Find(k, func(l *Line) error { got = append(got, l.String()); return nil }); err != nil {
			t.Fatalf("Find(%s): %v", k, err)
		}
		w := want[k]
		if len(got) != len(w) {
			t.Fatalf("Find(%s): %d lines, want %d (marks %d)", k, len(got), len(w), len(tab.marks))
		}
		for j := range w {
			if got[j] != w[j] {
				t.Fatalf("Find(%s): line %d differs", k, j)
			}
		}
	}
}
