// Command cdxgen writes a synthetic CDXJ index, as warcio.js writes it and
// sorted by urlkey as indexes are, and a rewrite log that makes a share of
// its records revisits: the input of the warccdx benchmark
// (scripts/bench-cdx.sh). With -dup, a share of the records repeat an
// earlier record's payload (its digest and length), and -mix gives the
// lines a crawl's variety (MIME types, statuses, revisit lines, two years
// of months): the input of warcdedup assess --cdx (scripts/bench-assess.sh).
//
//	cdxgen -lines 10000000 -files 1000 -rewrite 0.3 -index index.cdxj -log rewrite.log
//	cdxgen -lines 10000000 -files 1000 -dup 0.35 -mix -index index.cdxj -log /dev/null
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
	dup := flag.Float64("dup", 0, "share of the records that repeat an earlier record's payload")
	mix := flag.Bool("mix", false, "vary MIME types, statuses and months, and add revisit lines")
	flag.Parse()
	if *dup < 0 || *dup >= 1 {
		fmt.Fprintln(os.Stderr, "cdxgen: -dup must be at least 0 and below 1")
		os.Exit(2)
	}
	g := &payloads{dup: *dup}
	if err := write(*lines, *files, *share, *indexName, *logName, *seed, g, *mix); err != nil {
		fmt.Fprintln(os.Stderr, "cdxgen:", err)
		os.Exit(1)
	}
}

// payloads hands out the records' digests and lengths: new ones, or with
// probability dup one of the last payloads seen (a popular few more
// often), so that memory stays bounded whatever the number of lines.
type payloads struct {
	dup    float64
	recent []payload // a ring of the last payloads
	next   int
}

type payload struct {
	digest [32]byte
	length int64
	mime   int // index in mixMIME
}

const recentPayloads = 1 << 16

func (g *payloads) get(rng *rand.Rand, fresh func() payload) payload {
	if g.dup > 0 && len(g.recent) > 0 && rng.Float64() < g.dup {
		// Half the repeats are of the 64 most recent payloads: logos,
		// style sheets and scripts fetched again and again.
		n := len(g.recent)
		if rng.IntN(2) == 0 {
			n = min(n, 64)
		}
		return g.recent[(g.next-1-rng.IntN(n)+len(g.recent))%len(g.recent)]
	}
	p := fresh()
	if g.dup > 0 {
		if len(g.recent) < recentPayloads {
			g.recent = append(g.recent, p)
		} else {
			g.recent[g.next%recentPayloads] = p
		}
		g.next = (g.next + 1) % recentPayloads
		if len(g.recent) < recentPayloads {
			g.next = len(g.recent)
		}
	}
	return p
}

// The variety of -mix.
var (
	mixMIME   = []string{"text/html", "text/html", "text/html", "image/jpeg", "image/png", "text/css", "application/javascript", "application/pdf", "image/gif", "application/json"}
	mixStatus = []string{"200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "200", "404", "301", "302", "206"}
)

func write(lines, files int, share float64, indexName, logName string, seed uint64, g *payloads, mix bool) error {
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
		p := g.get(rng, func() payload {
			p := payload{length: 500 + rng.Int64N(40000)}
			for j := range p.digest {
				p.digest[j] = b32[rng.IntN(32)]
			}
			if mix {
				p.mime = rng.IntN(len(mixMIME))
			}
			return p
		})
		length := p.length
		copy(digest, p.digest[:])
		off := next[f]
		next[f] += length
		host := i * 1000 / lines // urlkeys in increasing order
		date, mime, status := "2024060112", "text/html", "200"
		if mix {
			m := i * 24 / lines // two years, in urlkey order like the hosts
			date = fmt.Sprintf("%04d%02d0112", 2023+m/12, m%12+1)
			mime, status = mixMIME[p.mime], mixStatus[rng.IntN(len(mixStatus))]
			if rng.IntN(50) == 0 {
				mime, length = "warc/revisit", 600+rng.Int64N(400)
			}
		}
		b = b[:0]
		b = fmt.Appendf(b, "com,example,host%04d)/path/page-%09d.html %s%04d ", host, i, date, i%10000)
		b = fmt.Appendf(b, `{"url":"https://host%04d.example.com/path/page-%09d.html","mime":"%s","status":"%s","digest":"%s","length":"`, host, i, mime, status, digest)
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
