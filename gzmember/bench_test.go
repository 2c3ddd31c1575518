//go:build cgo && !nozlib

package gzmember

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
)

// cpuMetric runs the benchmark's loop and reports, beside the elapsed time,
// the process's CPU time per operation and the MB/s it stands for
// ("cpu-MB/s"), which a shared machine disturbs far less.
func cpuMetric(b *testing.B, bytes int64, loop func()) {
	b.SetBytes(bytes)
	start := processCPU()
	for b.Loop() {
		loop()
	}
	if cpu := processCPU() - start; cpu > 0 {
		perOp := float64(cpu.Nanoseconds()) / float64(b.N)
		b.ReportMetric(perOp, "cpu-ns/op")
		b.ReportMetric(float64(bytes)/perOp*1e3, "cpu-MB/s")
	}
}

// benchRecords are 64 WARC records of about 30 KB of text each, zlib level
// 6 members (the usual writer), with their payloads: about 2 MB inflated.
func benchRecords(b *testing.B, s Setting) (members, payloads [][]byte, stored, inflated int64) {
	for i := range 64 {
		p := warcRecord(textPayload(uint64(i), 20<<10+(i*7919)%(20<<10)))
		m := zlibMember(b, headers[0].h.bytes(), p, s, 0, 0, 0)
		members, payloads = append(members, m), append(payloads, p)
		stored += int64(len(m))
		inflated += int64(len(p))
	}
	return members, payloads, stored, inflated
}

// BenchmarkDescribe is what a rewrite pays per member that becomes a
// revisit: the SHA-256 (and 4 KiB of CRC-32) of the member's bytes as they
// pass; beside it, for scale, gzmulti reading the same members (the read
// the rewrite does anyway) without and with a Describer's Tee. MB/s of
// stored (compressed) bytes.
func BenchmarkDescribe(b *testing.B) {
	members, _, stored, _ := benchRecords(b, Setting{Level: 6, MemLevel: 8, WindowBits: 15})
	b.Run("describe", func(b *testing.B) {
		d := NewDescriber(0)
		b.ReportAllocs()
		cpuMetric(b, stored, func() {
			for _, m := range members {
				d.Reset(int64(len(m)))
				d.Write(m)
				if _, err := d.Description(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	for _, tee := range []bool{false, true} {
		name := map[bool]string{false: "gzmulti read", true: "gzmulti read through Tee"}[tee]
		b.Run(name, func(b *testing.B) {
			d := NewDescriber(0)
			buf := make([]byte, 32<<10)
			var z *gzmulti.Reader
			cpuMetric(b, stored, func() {
				for _, m := range members {
					var src io.ReadSeeker = bytes.NewReader(m)
					if tee {
						d.Reset(int64(len(m)))
						src = d.Tee(src)
					}
					if z == nil {
						z, _ = gzmulti.NewReader(src, "bench")
					} else {
						z.Reset(src, "bench")
					}
					if _, err := z.Next(); err != nil {
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
					if tee {
						if _, err := d.Description(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}

// BenchmarkRebuild rebuilds members that match: at the first setting tried
// (level 6, or the setting the last member matched), and level 1 members
// from a fresh Rebuilder each (the worst place in the order for memLevel
// 8). MB/s of inflated bytes.
func BenchmarkRebuild(b *testing.B) {
	for _, bc := range []struct {
		name  string
		s     Setting
		fresh bool
	}{
		{"level 6", Setting{Level: 6, MemLevel: 8, WindowBits: 15}, false},
		{"level 9 learnt", Setting{Level: 9, MemLevel: 8, WindowBits: 15}, false},
		{"level 1 each from the start", Setting{Level: 1, MemLevel: 8, WindowBits: 15}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			members, payloads, _, inflated := benchRecords(b, bc.s)
			descs := make([]Description, len(members))
			for i, m := range members {
				descs[i] = describe(b, m)
			}
			r := NewRebuilder()
			defer r.Close()
			cpuMetric(b, inflated, func() {
				for i := range descs {
					if bc.fresh {
						r.last = Setting{}
					}
					if _, err := r.Rebuild(&descs[i], (&opener{p: payloads[i]}).open, io.Discard); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkFreshMember is, for scale, what undo pays today for a restored
// record's member: klauspost/compress gzip at its default level, over the
// same records. MB/s of inflated bytes.
func BenchmarkFreshMember(b *testing.B) {
	_, payloads, _, inflated := benchRecords(b, Setting{Level: 6, MemLevel: 8, WindowBits: 15})
	zw := kgzip.NewWriter(io.Discard)
	cpuMetric(b, inflated, func() {
		for _, p := range payloads {
			zw.Reset(io.Discard)
			zw.Write(p)
			if err := zw.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNotRebuildable is the cost of a member no setting makes (Go's
// writer), small and large, with the Prefix check and without it (what the
// 4 bytes of Prefix in a description save). MB/s of inflated bytes.
func BenchmarkNotRebuildable(b *testing.B) {
	for _, size := range []int{30 << 10, 2 << 20} {
		p := textPayload(1, size)
		var buf bytes.Buffer
		zw, _ := kgzip.NewWriterLevel(&buf, kgzip.DefaultCompression)
		zw.Write(p)
		zw.Close()
		d := describe(b, buf.Bytes())
		for _, noPrefix := range []bool{false, true} {
			name := map[bool]string{false: "prefix", true: "no prefix"}[noPrefix]
			b.Run(fmtSize(size)+" "+name, func(b *testing.B) {
				r := NewRebuilder()
				r.noPrefix = noPrefix
				defer r.Close()
				cpuMetric(b, int64(len(p)), func() {
					if _, err := r.Rebuild(&d, (&opener{p: p}).open, io.Discard); err == nil {
						b.Fatal("rebuilt")
					}
				})
			})
		}
	}
}

func fmtSize(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + " MB"
	}
	return strconv.Itoa(n>>10) + " KB"
}
