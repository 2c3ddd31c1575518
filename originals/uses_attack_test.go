package originals_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/source"
)

// heapSampler is a table's bytes that, every every-th read, notes the
// live heap (after a collection) above base: what a look-up holds while
// it reads the table.
type heapSampler struct {
	r     io.ReaderAt
	base  uint64
	every int
	reads atomic.Int64
	peak  uint64
}

func (h *heapSampler) ReadAt(p []byte, off int64) (int, error) {
	if h.base != 0 && h.reads.Add(1)%int64(h.every) == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > h.base && ms.HeapAlloc-h.base > h.peak {
			h.peak = ms.HeapAlloc - h.base
		}
	}
	return h.r.ReadAt(p, off)
}

// TestPlanMemoryFlatInDuplicates proves that learning how many duplicates
// name an original (the uses OpenPlanned keeps a small original in memory
// for) holds no memory in the number of duplicate lines of a digest: a
// digest of a crawl's most common payload (an empty body, a tracking
// pixel) has millions of duplicates, each read once by the look-up.
// Counting them through a list of every duplicate's (class, URI, date)
// held them all at once (here 100,000 lines: tens of MB).
func TestPlanMemoryFlatInDuplicates(t *testing.T) {
	const dups = 100000
	digestOf := "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
	origURI := "http://example.com/" + strings.Repeat("o", 200)
	kept := manifest.Line{File: "o.warc", Offset: 0, Length: 500, URI: origURI, Date: "20240102000000",
		Digest: digestOf, Class: 1, Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
	var b bytes.Buffer
	b.Write(kept.Append(nil))
	var last manifest.Line
	for i := range dups {
		d := kept
		d.File, d.Offset, d.URI, d.Copy, d.RefURI, d.RefDate = "d.warc", int64(i)*1000, fmt.Sprintf("http://example.com/d%d", i), i+2, kept.URI, kept.Date
		b.Write(d.Append(nil))
		last = d
	}
	data := b.Bytes()
	h := &heapSampler{r: bytes.NewReader(data), every: 64}
	tab, err := manifest.NewTable(h, int64(len(data)), "numbered.manifest")
	if err != nil {
		t.Fatal(err)
	}
	o, err := originals.New(&source.Locator{Roots: []string{t.TempDir()}}, tab)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.base = ms.HeapAlloc
	p, err := o.Plan(&last)
	if err != nil || p.Original == nil || *p.Original != kept {
		t.Fatalf("Plan: %+v, %v; want the kept line", p, err)
	}
	// Reads of the table are 8 KiB: some 4,000 here, sampled every 64th.
	if h.peak > 4<<20 {
		t.Errorf("the look-up of a digest of %d duplicates held %.1f MB of heap; want it flat in the duplicates (under 4 MB)", dups, float64(h.peak)/(1<<20))
	}
	t.Logf("peak heap held during the look-up: %.1f MB", float64(h.peak)/(1<<20))
}
