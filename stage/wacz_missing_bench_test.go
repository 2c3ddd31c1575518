package stage

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"warcdedup/manifest"
)

// BenchmarkRevisitOriginsOneDigest measures what revisitOrigins holds
// while a digest's revisit lines wait for its responses: crawler
// revisits (Browsertrix, Heritrix) of one payload each naming their own
// URL's earlier capture, n of them in one package. Reported: the heap
// held per revisit line at the digest's end.
func BenchmarkRevisitOriginsOneDigest(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				pr := &PackageRewrite{}
				o := pr.newRevisitOrigins(context.Background())
				m := PackageMember{Package: "a.wacz", Path: "/c/a.wacz"}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range n {
					l := &manifest.Line{File: "a.wacz%23archive%2Fdata.warc.gz", Offset: int64(i) * 500, Length: 500,
						RefURI: fmt.Sprintf("https://example.com/page/%d/pixel.gif", i), RefDate: "2024-01-02T03:04:05Z"}
					o.revisit(l, m)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heapB/revisit")
				b.ReportMetric(float64(len(o.waiting)), "held")
				o.endDigest()
			}
		})
	}
}
