package record_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/record"
	"warcdedup/scripts/gen"
)

// BenchmarkReader reads every record of a generated file of 4 KB payloads
// as warcsum does (header, HTTP head of responses, block, Finish), plain
// (the cost of parsing alone) and one gzip member per record. The bytes per
// second are of the file as stored.
func BenchmarkReader(b *testing.B) {
	for _, f := range []gen.Format{gen.WARC10, gen.WARC10Gz} {
		b.Run(f.String(), func(b *testing.B) {
			dir := b.TempDir()
			res, err := gen.Write(dir, gen.Config{Records: 6000, DupRate: 0.3, Seed: 1, MeanPayload: 4000,
				Formats: []gen.Format{f}, Chunked: 0.05, NonCandidates: true})
			if err != nil {
				b.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, res.Names[0]))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var r *record.Reader
			for b.Loop() {
				if r == nil {
					r, err = record.NewReader(bytes.NewReader(data), "bench")
				} else {
					err = r.Reset(bytes.NewReader(data), "bench")
				}
				if err != nil {
					b.Fatal(err)
				}
				for {
					rec, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if rec.Type == "response" {
						if _, err := r.ReadHTTPHead(); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := r.WriteTo(io.Discard); err != nil {
						b.Fatal(err)
					}
					if err := r.Finish(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
