package manifest

import (
	"bytes"
	"fmt"
	"testing"
)

// TestTableMarksBounded proves that a table's marks stay under maxMarks
// however long the table (memory flat in its lines: issue 22), and that
// every digest is still found, and found whole, once they were thinned.
func TestTableMarksBounded(t *testing.T) {
	defer func(every int64, max int) { markEvery, maxMarks = every, max }(markEvery, maxMarks)
	markEvery, maxMarks = 256, 16
	var b bytes.Buffer
	const digests = 3000
	for i := range digests {
		for c := range 1 + i%3 {
			l := Line{File: "f", Offset: int64(c), Length: 1, URI: fmt.Sprintf("http://h/%d", i), Date: "d", Digest: fmt.Sprintf("md5:%032x", i), Fields: 6}
			b.Write(l.Append(nil))
		}
	}
	data := b.Bytes()
	tab, err := NewTable(bytes.NewReader(data), int64(len(data)), "t")
	if err != nil {
		t.Fatal(err)
	}
	// Unthinned, a mark every 256 bytes would be len/256 (over 1,000).
	if n := len(tab.marks); n >= maxMarks || n < maxMarks/2 {
		t.Errorf("%d marks for %d bytes; want between %d and %d", n, len(data), maxMarks/2, maxMarks-1)
	}
	for i := range digests {
		d := fmt.Sprintf("md5:%032x", i)
		got := 0
		if err := tab.Find(d, func(l *Line) error {
			if l.Digest != d {
				t.Errorf("Find(%s) gave %s", d, l.Digest)
			}
			got++
			return nil
		}); err != nil || got != 1+i%3 {
			t.Fatalf("Find(%s): %d lines, %v; want %d", d, got, err, 1+i%3)
		}
	}
}
