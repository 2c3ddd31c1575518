package gzmulti

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// BenchmarkMemberSize reads files of members of one size each, text-like
// (a WARC request record is about 400 bytes, a response's payload 30 KB
// on the bench collection): the inflater's cost per member, which for
// small members is mostly its start (ISA-L builds its Huffman tables for
// every block). Run with and without -tags=isal to compare inflaters: on
// the 2-core bench machine klauspost/compress took 4,951 ns a 400-byte
// member, ISA-L 4,860; 7,733 and 4,920 at 1 KB; 19,558 and 7,586 at 4 KB.
// Inflating small members with klauspost instead would save nothing.
func BenchmarkMemberSize(b *testing.B) {
	for _, size := range []int{400, 1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			var file bytes.Buffer
			members := 0
			for i := 0; file.Len() < 4<<20; i++ {
				file.Write(klauspostMember(b, textPayload(uint64(i%64), size), gzip.Header{}, gzip.DefaultCompression))
				members++
			}
			data := file.Bytes()
			b.SetBytes(int64(size * members))
			buf := make([]byte, 32<<10)
			for b.Loop() {
				z, err := NewReader(bytes.NewReader(data), "bench.warc.gz")
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := z.Next(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
					for {
						_, err := z.Read(buf)
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*members), "ns/member")
		})
	}
}
