package redisindex

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
	"warcdedup/manifest"
)

// BenchmarkExport exports a crawl of BENCH_ORIGINALS originals (100,000
// by default; synthetic lines, 40 WACZ files) into an empty Redis, and
// reports originals a second and the Redis memory an original takes.
func BenchmarkExport(b *testing.B) {
	n := 100000
	if s := os.Getenv("BENCH_ORIGINALS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := filepath.Join(b.TempDir(), "index")
	var files []crawlindex.FileInfo
	for i := range 40 {
		files = append(files, crawlindex.FileInfo{Name: fmt.Sprintf("crawl-%02d.wacz", i), Size: 1 << 30, SHA256: strings.Repeat("0", 64)})
	}
	lines := make([]manifest.Line, n)
	for i := range lines {
		s := sha256.Sum256([]byte(strconv.Itoa(i)))
		lines[i] = manifest.Line{File: fmt.Sprintf("big/crawl-%02d.wacz", i%40), Offset: int64(i) * 9000, Length: 9000,
			URI: fmt.Sprintf("https://www.example.org/section-%d/page-%d.html", i%97, i), Date: "2024-06-05T10:11:12.345Z",
			Digest: fmt.Sprintf("sha256:%x", s), Fields: 6}
	}
	sortByDigest(lines)
	orig := filepath.Join(b.TempDir(), "o")
	f, err := os.Create(orig)
	if err != nil {
		b.Fatal(err)
	}
	w := manifest.NewWriter(f)
	for i := range lines {
		w.Write(&lines[i])
	}
	w.Flush()
	f.Close()
	lines = nil
	if _, err := crawlindex.Commit(dir, crawlindex.Change{Add: &crawlindex.Crawl{Name: "big", Location: "/x", Records: int64(n)}, Files: files, Originals: orig}); err != nil {
		b.Fatal(err)
	}
	ix, err := crawlindex.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	// The claims on alldupes by script (one command a batch), and one
	// HSETNX a claim (a server that refuses scripts).
	for _, scripts := range []bool{true, false} {
		b.Run(fmt.Sprintf("scripts=%v", scripts), func(b *testing.B) {
			srv := redistest.Start(b)
			c, err := redis.Dial(context.Background(), srv.URL, redis.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if !scripts {
				if _, err := c.Do("ACL", "SETUSER", "default", "-@scripting"); err != nil {
					b.Fatal(err)
				}
			}
			base := usedMemory(b, c)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				c.Do("FLUSHALL")
				b.StartTimer()
				if _, err := Export(context.Background(), c, ix, ExportOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "originals/s")
			b.ReportMetric(float64(usedMemory(b, c)-base)/float64(n), "redis-bytes/original")
		})
	}
}

func usedMemory(b *testing.B, c *redis.Conn) int64 {
	v, err := c.Do("MEMORY", "STATS")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i+1 < len(v.Array); i += 2 {
		if v.Array[i].Str == "total.allocated" {
			return v.Array[i+1].Int
		}
	}
	b.Fatal("MEMORY STATS has no total.allocated")
	return 0
}
