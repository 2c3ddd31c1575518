// Command cdxgen writes a synthetic CDXJ index, as warcio.js writes it and
// sorted by urlkey as indexes are, and a rewrite log that makes a share of
// its records revisits: the input of the warccdx benchmark
// (scripts/bench-cdx.sh).
//
//	cdxgen -lines 10000000 -files 1000 -rewrite 0.3 -index index.cdxj -log rewrite.log
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"warcdedup/rewritelog"
)

type rec struct{ off, length int64 }

func main() {
	lines := flag.Int("lines", 1000000, "index lines (records)")
	files := flag.Int("files", 1000, "WARC files the records are spread over")
	share := flag.Float64("rewrite", 0.3, "share of the records the log rewrites")
	indexName := flag.String("index", "index.cdxj", "index `FILE` to write")
	logName := flag.String("log", "rewrite.log", "log `FILE` to write")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := write(*lines, *files, *share, *indexName, *logName, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "cdxgen:", err)
		os.Exit(1)
	}
}

func write(lines, files int, share float64, indexName, logName string, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := make([]string, files)
	for i := range names {
		names[i] = fmt.Sprintf("crawl-20240601%06d-%05d.warc.gz", i*7, i)
	}
	next := make([]int64, files)      // next offset in each file
	rewritten := make([][]rec, files) // records the log rewrites, by file
	idx, err := os.Create(indexName)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(idx, 1<<20)
	var b []byte
	const b32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	digest := make([]byte, 32)
	for i := range lines {
		f := rng.IntN(files)
		length := 500 + rng.Int64N(40000)
		off := next[f]
		next[f] += length
		for j := range digest {
			digest[j] = b32[rng.IntN(32)]
		}
		host := i * 1000 / lines // urlkeys in increasing order
		b = b[:0]
		b = fmt.Appendf(b, "com,example,host%04d)/path/page-%09d.html 2024060112%04d ", host, i, i%10000)
		b = fmt.Appendf(b, `{"url":"https://host%04d.example.com/path/page-%09d.html","mime":"text/html","status":"200","digest":"%s","length":"`, host, i, digest)
		b = strconv.AppendInt(b, length, 10)
		b = append(b, `","offset":"`...)
		b = strconv.AppendInt(b, off, 10)
		b = append(b, `","filename":"`...)
		b = append(b, names[f]...)
		b = append(b, "\"}\n"...)
		if _, err := w.Write(b); err != nil {
			return err
		}
		if rng.Float64() < share {
			rewritten[f] = append(rewritten[f], rec{off, length})
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := idx.Close(); err != nil {
		return err
	}

	lf, err := os.Create(logName)
	if err != nil {
		return err
	}
	w = bufio.NewWriterSize(lf, 1<<20)
	b = append(rewritelog.AppendRun(b[:0], time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC)), '\n')
	w.Write(b)
	order := make([]int, files)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, c int) int {
		if names[a] < names[c] {
			return -1
		}
		return 1
	})
	for _, f := range order {
		var shift int64
		for _, r := range rewritten[f] {
			newLen := 520 + r.length%40
			if newLen >= r.length {
				newLen = r.length
			}
			for j := range digest {
				digest[j] = b32[rng.IntN(32)]
			}
			e := rewritelog.Entry{File: names[f], OldOffset: r.off, OldLength: r.length, NewOffset: r.off + shift, NewLength: newLen,
				Kind: rewritelog.Revisit, PayloadDigest: "sha1:" + string(digest), RefersToURI: "https://host0000.example.com/original", RefersTo: "2024-06-01T00:00:00Z"}
			shift += newLen - r.length
			b = append(e.AppendTo(b[:0]), '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return lf.Close()
}
