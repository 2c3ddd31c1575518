package gzmulti

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// benchFile is a ~64 MB multi-member file of ~30 KB records, two text-like
// for one of random bytes, built once for all benchmarks.
var benchFile struct {
	once    sync.Once
	data    []byte
	raw     int64 // decompressed size
	members int
}

func benchData(b *testing.B) ([]byte, int64, int) {
	benchFile.once.Do(func() {
		// 96 distinct members, compressed once, repeated up to 64 MB.
		var pool [][]byte
		var sizes []int64
		for i := range 96 {
			n := 20<<10 + (i*7919)%(20<<10)
			p := textPayload(uint64(i), n)
			if i%3 == 2 {
				p = randomPayload(uint64(i), n)
			}
			pool = append(pool, klauspostMember(b, p, gzip.Header{}, gzip.DefaultCompression))
			sizes = append(sizes, int64(n))
		}
		var buf bytes.Buffer
		for i := 0; buf.Len() < 64<<20; i++ {
			buf.Write(pool[i%len(pool)])
			benchFile.raw += sizes[i%len(pool)]
			benchFile.members++
		}
		benchFile.data = buf.Bytes()
	})
	return benchFile.data, benchFile.raw, benchFile.members
}

// BenchmarkRead reads every member of the file with a Reader.
func BenchmarkRead(b *testing.B) {
	data, raw, members := benchData(b)
	b.SetBytes(raw)
	b.ReportAllocs()
	buf := make([]byte, 32<<10)
	for b.Loop() {
		z, err := NewReader(bytes.NewReader(data), "bench.warc.gz")
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		count := 0
		for {
			_, err := z.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			count++
			for {
				k, err := z.Read(buf)
				n += int64(k)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		if n != raw || count != members {
			b.Fatalf("read %d bytes in %d members, want %d in %d", n, count, raw, members)
		}
	}
	b.ReportMetric(float64(members), "members/op")
}

// BenchmarkKlauspostMultistream reads the same bytes with a bare klauspost
// gzip.Reader in multistream mode, over the same buffered reader and with the
// same Read calls: the floor that BenchmarkRead adds its per-member work to.
func BenchmarkKlauspostMultistream(b *testing.B) {
	data, raw, members := benchData(b)
	b.SetBytes(raw)
	b.ReportAllocs()
	buf := make([]byte, 32<<10)
	for b.Loop() {
		zr, err := gzip.NewReader(bufio.NewReaderSize(bytes.NewReader(data), bufferSize))
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for {
			k, err := zr.Read(buf)
			n += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if n != raw {
			b.Fatalf("read %d bytes, want %d", n, raw)
		}
	}
	b.ReportMetric(float64(members), "members/op")
}
