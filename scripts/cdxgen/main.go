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

// write writes the index of lines records spread over files WARC files,
// then the log that rewrites a share of them, from the seed: the same
// arguments, the same bytes.
func write(lines, files int, share float64, indexName, logName string, seed uint64, g *payloads, mix bool) error {
	x := newIndexGen(files, share, seed, g, mix)
	if err := x.writeIndex(indexName, lines); err != nil {
		return err
	}
	return x.writeLog(logName)
}

// indexGen is one generation: the random source, drawn from in the order
// write's steps take, and the records each file got.
type indexGen struct {
	rng       *rand.Rand
	g         *payloads
	mix       bool
	share     float64
	names     []string
	next      []int64 // next offset in each file
	rewritten [][]rec // records the log rewrites, by file
	digest    []byte
	b         []byte // the line being written
}

const b32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

func newIndexGen(files int, share float64, seed uint64, g *payloads, mix bool) *indexGen {
	x := &indexGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), g: g, mix: mix, share: share,
		names: make([]string, files), next: make([]int64, files), rewritten: make([][]rec, files), digest: make([]byte, 32)}
	for i := range x.names {
		x.names[i] = fmt.Sprintf("crawl-20240601%06d-%05d.warc.gz", i*7, i)
	}
	return x
}

// writeIndex writes the index, its lines in urlkey order.
func (x *indexGen) writeIndex(name string, lines int) error {
	idx, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(idx, 1<<20)
	for i := range lines {
		if _, err := w.Write(x.line(i, lines)); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return idx.Close()
}

// line is index line i of lines: a record at the end of a file drawn at
// random, its payload new or repeated, and picked for the log at the
// rewrite's share.
func (x *indexGen) line(i, lines int) []byte {
	rng := x.rng
	f := rng.IntN(len(x.names))
	p := x.g.get(rng, x.freshPayload)
	length := p.length
	copy(x.digest, p.digest[:])
	off := x.next[f]
	x.next[f] += length
	host := i * 1000 / lines // urlkeys in increasing order
	date, mime, status := "2024060112", "text/html", "200"
	if x.mix {
		m := i * 24 / lines // two years, in urlkey order like the hosts
		date = fmt.Sprintf("%04d%02d0112", 2023+m/12, m%12+1)
		mime, status = mixMIME[p.mime], mixStatus[rng.IntN(len(mixStatus))]
		if rng.IntN(50) == 0 {
			mime, length = "warc/revisit", 600+rng.Int64N(400)
		}
	}
	b := x.b[:0]
	b = fmt.Appendf(b, "com,example,host%04d)/path/page-%09d.html %s%04d ", host, i, date, i%10000)
	b = fmt.Appendf(b, `{"url":"https://host%04d.example.com/path/page-%09d.html","mime":"%s","status":"%s","digest":"%s","length":"`, host, i, mime, status, x.digest)
	b = strconv.AppendInt(b, length, 10)
	b = append(b, `","offset":"`...)
	b = strconv.AppendInt(b, off, 10)
	b = append(b, `","filename":"`...)
	b = append(b, x.names[f]...)
	b = append(b, "\"}\n"...)
	x.b = b
	if rng.Float64() < x.share {
		x.rewritten[f] = append(x.rewritten[f], rec{off, length})
	}
	return b
}

// freshPayload is a payload not seen before.
func (x *indexGen) freshPayload() payload {
	p := payload{length: 500 + x.rng.Int64N(40000)}
	for j := range p.digest {
		p.digest[j] = b32[x.rng.IntN(32)]
	}
	if x.mix {
		p.mime = x.rng.IntN(len(mixMIME))
	}
	return p
}

// writeLog writes the log of one run that made the records picked
// revisits, file by file in name order, each shifting those after it.
func (x *indexGen) writeLog(name string) error {
	lf, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(lf, 1<<20)
	x.b = append(rewritelog.AppendRun(x.b[:0], time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC)), '\n')
	w.Write(x.b)
	for _, f := range x.fileOrder() {
		var shift int64
		for _, r := range x.rewritten[f] {
			e := x.entry(f, r, shift)
			shift += e.NewLength - r.length
			x.b = append(e.AppendTo(x.b[:0]), '\n')
			if _, err := w.Write(x.b); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return lf.Close()
}

// fileOrder is the files' numbers in the order of their names.
func (x *indexGen) fileOrder() []int {
	order := make([]int, len(x.names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, c int) int {
		if x.names[a] < x.names[c] {
			return -1
		}
		return 1
	})
	return order
}

// entry is the log entry of record r of file f made a revisit, the
// records before it in the file having shifted it by shift.
func (x *indexGen) entry(f int, r rec, shift int64) rewritelog.Entry {
	newLen := 520 + r.length%40
	if newLen >= r.length {
		newLen = r.length
	}
	for j := range x.digest {
		x.digest[j] = b32[x.rng.IntN(32)]
	}
	return rewritelog.Entry{File: x.names[f], OldOffset: r.off, OldLength: r.length, NewOffset: r.off + shift, NewLength: newLen,
		Kind: rewritelog.Revisit, PayloadDigest: "sha1:" + string(x.digest), RefersToURI: "https://host0000.example.com/original", RefersTo: "2024-06-01T00:00:00Z"}
}
