package progress

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

func TestCountingReader(t *testing.T) {
	for _, c := range []struct {
		name  string
		text  string
		start int64 // the counter before
	}{
		{"empty", "", 0},
		{"read in one byte at a time", "abcdef", 0},
		{"added to what the counter holds", "abc", 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int64
			n.Store(c.start)
			got, err := io.ReadAll(CountingReader(iotest.OneByteReader(strings.NewReader(c.text)), &n))
			if err != nil || string(got) != c.text {
				t.Fatalf("read %q, %v; want %q", got, err, c.text)
			}
			if want := c.start + int64(len(c.text)); n.Load() != want {
				t.Errorf("counter %d, want %d", n.Load(), want)
			}
		})
	}
	r := strings.NewReader("x")
	if CountingReader(r, nil) != io.Reader(r) {
		t.Error("no counter: not the reader itself")
	}
}
