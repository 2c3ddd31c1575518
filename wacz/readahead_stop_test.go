package wacz

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
)

// gatedReader holds its first read until gate is closed, and counts the
// reads it was asked for.
type gatedReader struct {
	r     io.ReaderAt
	gate  chan struct{}
	reads atomic.Int64
}

func (g *gatedReader) ReadAt(p []byte, off int64) (int, error) {
	if g.reads.Add(1) == 1 {
		<-g.gate
	}
	return g.r.ReadAt(p, off)
}

// TestReadAheadAbandon proves that a read back its rebuild gives up
// (cancelled while it waits for the packages it requires) ends at its
// next read of the file, not once it has read every member, and is not
// taken for a read back; and that one allowed to end is.
func TestReadAheadAbandon(t *testing.T) {
	const size = 8 << 20 // eight of the read back's 1 MiB reads
	data := bytes.Repeat([]byte("WARC/1.1\r\n"), size/10)
	m := &Member{Name: "archive/a.warc.gz", DataOffset: 64, CompressedSize: int64(len(data)) - 64, Size: int64(len(data)) - 64}
	for _, tc := range []struct {
		name      string
		abandon   bool
		wantReads int64 // at most
	}{
		{"abandoned during its first read", true, 1},
		{"left to end", false, size},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatedReader{r: bytes.NewReader(data), gate: make(chan struct{})}
			run := startReadAhead(g, "x.wacz (new version)", int64(len(data)), []*Member{m}, nil, true, func() (os.FileInfo, error) { return nil, nil })
			if tc.abandon {
				abandoned := make(chan struct{})
				go func() { run.abandon(); close(abandoned) }()
				for !run.stopped.Load() {
					runtime.Gosched()
				}
				close(g.gate)
				<-abandoned
				if got := g.reads.Load(); got > tc.wantReads {
					t.Fatalf("the read back went on for %d reads after it was abandoned, want at most %d", got, tc.wantReads)
				}
				if !errors.Is(run.a.err, errReadBackStopped) {
					t.Fatalf("an abandoned read back ended with %v, want it stopped", run.a.err)
				}
				return
			}
			close(g.gate)
			if a := run.wait(); a == nil || run.a.err != nil || g.reads.Load() < 8 {
				t.Fatalf("a read back left to end: %d reads, error %v", g.reads.Load(), run.a.err)
			}
		})
	}
}
