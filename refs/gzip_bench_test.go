package refs

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"os"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
)

// BenchmarkRevisitGzip measures the gzip member of one revisit (864 bytes,
// a revisit of the bench collection) at each level: what the rewrite pays
// for every duplicate, and what each level saves.
func BenchmarkRevisitGzip(b *testing.B) {
	rev, err := os.ReadFile("testdata/revisit.warc")
	if err != nil {
		b.Fatal(err)
	}
	for _, level := range []int{gzip.HuffmanOnly, gzip.StatelessCompression, 1, 2, 3, 4, 5, 6, 7, 9} {
		b.Run(fmt.Sprintf("klauspost-%d", level), func(b *testing.B) {
			var buf bytes.Buffer
			zw := gzmulti.NewWriter(&buf, level)
			b.SetBytes(int64(len(rev)))
			for b.Loop() {
				b.StopTimer()
				evict()
				b.StartTimer()
				buf.Reset()
				zw.Reset(&buf)
				zw.Write(rev)
				zw.CloseMember()
			}
			b.ReportMetric(float64(buf.Len()), "member-bytes")
		})
	}
	for _, level := range []int{1, 6} {
		b.Run(fmt.Sprintf("std-%d", level), func(b *testing.B) {
			var buf bytes.Buffer
			zw, _ := stdgzip.NewWriterLevel(&buf, level)
			for b.Loop() {
				buf.Reset()
				zw.Reset(&buf)
				zw.Write(rev)
				zw.Close()
			}
			b.ReportMetric(float64(buf.Len()), "member-bytes")
		})
	}
}

// evict walks 8 MB, as the inflate and hashes of a duplicate do between
// two revisits: the compressor's tables are then out of the caches.
var evictBuf = make([]byte, 8<<20)

func evict() {
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}
