package refs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/rewritetest"
	"warcdedup/scripts/gen"
)

// BenchmarkExamine is the examiner's work on each duplicate of a .warc.gz
// collection (payloads of about 20 kB, as the bench collection's): the
// record read, hashed and compared with its original, read too, and its
// revisit built and compressed. Bytes are the duplicates' as stored.
func BenchmarkExamine(b *testing.B) {
	c := generate(b, gen.Config{Files: 2, Records: 200, DupRate: 0.5, Seed: 91, MeanPayload: 20 << 10,
		MaxPayload: 256 << 10, Formats: []gen.Format{gen.WARC11Gz}})
	rw := &Rewriter{Roots: []string{c.dir}, Originals: rewritetest.Originals(b, c.all, c.dir)}
	files := map[string]*os.File{}
	sizes := map[string]int64{}
	var stored int64
	for _, l := range c.dups {
		if files[l.File] == nil {
			f, err := os.Open(filepath.Join(c.dir, l.File))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				b.Fatal(err)
			}
			files[l.File], sizes[l.File] = f, fi.Size()
		}
		stored += l.Length
	}
	if len(c.dups) == 0 {
		b.Fatal("no duplicates in the collection")
	}
	x := newExaminer(rw, nil)
	ctx := context.Background()
	b.SetBytes(stored / int64(len(c.dups)))
	// CPU time, steadier than the wall clock on a shared machine.
	start := processCPU()
	defer func() {
		if cpu := processCPU() - start; cpu > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}()
	i, revisits := 0, 0
	for b.Loop() {
		l := &c.dups[i%len(c.dups)]
		i++
		f, _, err := x.prepare(ctx, files[l.File], sizes[l.File], true, l, l.Offset)
		if err != nil {
			b.Fatalf("%s offset %d: %v", l.File, l.Offset, err)
		}
		if f.revisit == nil && !f.protected {
			b.Fatalf("%s offset %d: no revisit", l.File, l.Offset)
		}
		if f.revisit != nil {
			revisits++
		}
	}
	if revisits == 0 {
		b.Fatal("no duplicate became a revisit")
	}
}
