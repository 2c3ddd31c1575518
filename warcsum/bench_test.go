package warcsum

import (
	"io"
	"path/filepath"
	"testing"

	"warcdedup/digest"
	"warcdedup/scripts/gen"
)

// BenchmarkRun lists a generated .warc.gz file of about 48 MB, one gzip
// member per record, with small (4 KB) and typical (30 KB) payloads and each
// digest, the way the warcsum command does (Runner, -j 1); the bytes per
// second are of the file as stored. scripts/bench-inflate.sh measures the
// command against a C loop on collections of a gigabyte.
func BenchmarkRun(b *testing.B) {
	for _, size := range []struct {
		name string
		mean int
	}{{"4KB", 4000}, {"30KB", 30000}} {
		b.Run(size.name, func(b *testing.B) {
			dir := b.TempDir()
			// Records of the mean payload plus their request and headers.
			records := 48 << 20 / (size.mean + 3000)
			res, err := gen.Write(dir, gen.Config{Files: 1, Records: records, DupRate: 0.3, Seed: 1, MeanPayload: size.mean,
				Formats: []gen.Format{gen.WARC10Gz}, Chunked: 0.05, NonCandidates: true})
			if err != nil {
				b.Fatal(err)
			}
			inputs, err := Collect([]string{filepath.Join(dir, res.Names[0])}, false)
			if err != nil {
				b.Fatal(err)
			}
			for _, algo := range []digest.Algorithm{digest.SHA1, digest.MD5, digest.SHA256} {
				b.Run(algo.String(), func(b *testing.B) {
					r := &Runner{Options: Options{Algorithm: algo}, Jobs: 1}
					b.SetBytes(inputs[0].Size)
					b.ReportAllocs()
					for b.Loop() {
						st, err := r.Run(inputs, io.Discard)
						if err != nil || st.Failed() || st.Listed == 0 {
							b.Fatalf("%v, %+v", err, st)
						}
					}
				})
			}
		})
	}
}
