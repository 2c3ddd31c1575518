// Command mangen writes the manifests of a synthetic collection before
// and after a correct deduplication, as warcsum lists them (the
// after-manifest's revisits with their Refers-To, and a share of revisits
// already there before): the input of the warcsumcmp benchmark
// (scripts/bench-scale.sh), without WARC bytes. Memory does not grow with
// the number of records.
//
//	mangen -records 10000000 -dup 0.4 -before before.manifest -after after.manifest
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

func main() {
	records := flag.Int("records", 1000000, "records (lines of each manifest)")
	files := flag.Int("files", 160, "WARC files the records are spread over")
	dup := flag.Float64("dup", 0.4, "share of the responses that repeat an earlier payload (revisits after)")
	revisits := flag.Float64("revisits", 0.02, "share of the records that are revisits before already")
	before := flag.String("before", "before.manifest", "before-manifest `FILE` to write")
	after := flag.String("after", "after.manifest", "after-manifest `FILE` to write")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	g := &generator{rng: rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)), dup: *dup, revisits: *revisits,
		next: make([]int64, *files), shift: make([]int64, *files)}
	if err := g.write(*records, *before, *after); err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
}

// original is a payload kept as a response: its digest and capture.
type original struct {
	digest    string
	uri, date string
}

type generator struct {
	rng           *rand.Rand
	dup, revisits float64
	next, shift   []int64    // per file: the next offset before, and what the rewrite saved so far
	recent        []original // the payloads a duplicate may repeat (a bounded window)
	pos           int
}

const window = 4096

func (g *generator) write(records int, beforeName, afterName string) error {
	bf, err := os.Create(beforeName)
	if err != nil {
		return err
	}
	af, err := os.Create(afterName)
	if err != nil {
		return err
	}
	bw, aw := bufio.NewWriterSize(bf, 1<<20), bufio.NewWriterSize(af, 1<<20)
	start := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	var b, a []byte
	for i := range records {
		f := g.rng.IntN(len(g.next))
		file := fmt.Sprintf("crawl-20240601%06d-%05d.warc.gz", f*7, f)
		uri := fmt.Sprintf("https://host%04d.example.com/path/page-%09d.html", g.rng.IntN(10000), i)
		date := start.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		length := 2000 + g.rng.Int64N(30000)
		off := g.next[f]
		g.next[f] += length
		b, a = b[:0], a[:0]
		switch {
		case g.rng.Float64() < g.revisits && len(g.recent) > 0:
			// A revisit before, of an original: unchanged after.
			o := g.recent[g.rng.IntN(len(g.recent))]
			length = 600
			g.next[f] = off + length
			b = g.line(b, file, off, length, uri, date, o.digest, o.uri, o.date)
			a = g.line(a, file, off+g.shift[f], length, uri, date, o.digest, o.uri, o.date)
		case g.rng.Float64() < g.dup && len(g.recent) > 0:
			// A duplicate: a revisit after.
			o := g.recent[g.rng.IntN(len(g.recent))]
			b = g.line(b, file, off, length, uri, date, o.digest, "", "")
			newLen := int64(700)
			a = g.line(a, file, off+g.shift[f], newLen, uri, date, o.digest, o.uri, o.date)
			g.shift[f] += newLen - length
		default:
			o := original{digest: g.digest(), uri: uri, date: date}
			b = g.line(b, file, off, length, uri, date, o.digest, "", "")
			a = g.line(a, file, off+g.shift[f], length, uri, date, o.digest, "", "")
			if len(g.recent) < window {
				g.recent = append(g.recent, o)
			} else {
				g.recent[g.pos] = o
				g.pos = (g.pos + 1) % window
			}
		}
		bw.Write(b)
		aw.Write(a)
	}
	for _, w := range []*bufio.Writer{bw, aw} {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if err := bf.Close(); err != nil {
		return err
	}
	return af.Close()
}

func (g *generator) digest() string {
	const b32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	d := []byte("sha1:")
	for range 32 {
		d = append(d, b32[g.rng.IntN(32)])
	}
	return string(d)
}

// line appends a manifest line: a response, or with refURI a revisit.
func (g *generator) line(dst []byte, file string, off, length int64, uri, date, digest, refURI, refDate string) []byte {
	dst = append(dst, file...)
	dst = strconv.AppendInt(append(dst, ' '), off, 10)
	dst = strconv.AppendInt(append(dst, ' '), length, 10)
	dst = append(append(append(append(dst, ' '), uri...), ' '), date...)
	dst = append(append(dst, ' '), digest...)
	if refURI != "" {
		dst = append(append(append(append(append(dst, " -1 0 "...), refURI...), ' '), refDate...), '\n')
		return dst
	}
	return append(dst, '\n')
}
