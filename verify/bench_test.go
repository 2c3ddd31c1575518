package verify_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/verify"
)

// benchCollection makes manifests like those of the bench collection
// (scripts/bench-run.sh): n responses in 16 files, 40% of them
// duplicates of an earlier capture, rewritten as revisits after; URIs
// of some 60 bytes. Lines in file order, as warcsum writes them.
func benchCollection(n int) (before, after string) {
	rng := rand.New(rand.NewPCG(21, 2))
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	type capture struct{ uri, date, digest string }
	var originals []capture
	var b, a strings.Builder
	for i := range n {
		file := fmt.Sprintf("gen-%05d.warc.gz", i*16/n)
		off := int64(i%(n/16+1)) * 30000
		c := capture{fmt.Sprintf("https://www.example.edu/path/to/page-%d.html?utm_source=feed&n=%d", rng.IntN(1<<20), i),
			base.Add(time.Duration(i) * time.Second).Format(time.RFC3339), ""}
		if len(originals) > 0 && rng.IntN(10) < 4 {
			orig := originals[rng.IntN(len(originals))]
			c.digest = orig.digest
			fmt.Fprintf(&b, "%s %d 30000 %s %s %s\n", file, off, c.uri, c.date, c.digest)
			fmt.Fprintf(&a, "%s %d 900 %s %s %s -1 0 %s %s\n", file, off, c.uri, c.date, c.digest, orig.uri, orig.date)
			continue
		}
		c.digest = sha(fmt.Sprint("payload ", i))
		originals = append(originals, c)
		fmt.Fprintf(&b, "%s %d 30000 %s %s %s\n", file, off, c.uri, c.date, c.digest)
		fmt.Fprintf(&a, "%s %d 30000 %s %s %s\n", file, off, c.uri, c.date, c.digest)
	}
	return b.String(), a.String()
}

// BenchmarkRewriteAgainst measures verify on manifests of the bench
// collection's size (30,000 responses, 40% rewritten) with the memory
// the run gives it (stage.VerifyBudget and VerifyInMemory): its files,
// 31 MB together, stay in memory and are sorted there, not by the system
// sort.
func BenchmarkRewriteAgainst(b *testing.B) {
	before, after := benchCollection(30000)
	dir := b.TempDir()
	for b.Loop() {
		opt := verify.Options{Sort: syssort.Sorter{TempDir: dir, InMemory: 8 << 20, Budget: syssort.NewBudget(40 << 20), Compress: syssort.Compressor()}}
		st, err := opt.RewriteAgainst(context.Background(), manifest.NewReader(strings.NewReader(before), "before"),
			manifest.NewReader(strings.NewReader(after), "after"), nil, func(v string) { b.Fatalf("violation %s", v) })
		if err != nil {
			b.Fatal(err)
		}
		if st.Before != 30000 || st.Violations != 0 {
			b.Fatalf("stats %+v", st)
		}
	}
}
