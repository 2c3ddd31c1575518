package cdx

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchIndex is n lines of an index as warcio.js writes it, CDXJ or CDX11.
func benchIndex(n int, format Format) []byte {
	var b bytes.Buffer
	for i := range n {
		url := fmt.Sprintf("https://www%d.example.com/path/to/page-%d.html?q=%d", i%97, i, i*7)
		key := fmt.Sprintf("com,example,www%d)/path/to/page-%d.html?q=%d", i%97, i, i*7)
		digest := fmt.Sprintf("%032d", i*2654435761)
		if format == CDXJ {
			fmt.Fprintf(&b, `%s 2024060100%04d {"url":"%s","mime":"text/html","status":"200","digest":"%s","length":"%d","offset":"%d","filename":"crawl-%05d.warc.gz"}`+"\n",
				key, i%10000, url, digest, 1000+i%5000, i*3000, i%1000)
		} else {
			fmt.Fprintf(&b, "%s 2024060100%04d %s text/html 200 %s - - %d %d crawl-%05d.warc.gz\n",
				key, i%10000, url, digest, 1000+i%5000, i*3000, i%1000)
		}
	}
	return b.Bytes()
}

func benchRead(b *testing.B, format Format) {
	data := benchIndex(200000, format)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench", Options{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			l, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil || l.Offset < 0 {
				b.Fatal(err)
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkReadCDXJ reads warcio.js CDXJ lines (about 230 bytes each).
func BenchmarkReadCDXJ(b *testing.B) { benchRead(b, CDXJ) }

// BenchmarkReadCDX reads CDX11 lines.
func BenchmarkReadCDX(b *testing.B) { benchRead(b, CDX) }

// BenchmarkEditWrite reads CDXJ, edits offset and length of every line
// and writes it.
func BenchmarkEditWrite(b *testing.B) {
	data := benchIndex(200000, CDXJ)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		r, _ := NewReader(bytes.NewReader(data), "bench", Options{})
		w := NewWriter(io.Discard)
		for {
			l, err := r.Next()
			if err == io.EOF {
				break
			}
			l.SetOffset(l.Offset + 10)
			l.SetLength(l.Length - 10)
			if err := w.Write(l); err != nil {
				b.Fatal(err)
			}
			lines++
		}
		w.Flush()
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}
