// Command indexcommit commits a synthetic crawl of N originals to a crawl
// index, as warcdedup run --index commits a verified crawl, and says how
// long the commit took and, apart, the compaction after it: the crawl
// index benchmark (scripts/bench-index-scale.sh), without WARC bytes.
//
//	indexcommit -index DIR -crawl c01 -originals 1000000
//
// The crawl's originals are written first (sorted on digest as the job
// sorts them, by construction: memory does not grow with N), under -tmp,
// and removed after. Printed, one line: the crawl, the originals, the
// index's originals before, the commit's seconds, the compaction's
// seconds, the lines the compaction rewrote, the generations it made, and
// the index's bytes after (its current generation's files).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"warcdedup/crawlindex"
)

func main() {
	index := flag.String("index", "", "the crawl index `DIR`")
	crawl := flag.String("crawl", "", "the crawl's `NAME`")
	n := flag.Int64("originals", 1000000, "originals of the crawl")
	seed := flag.Uint64("seed", 1, "random seed (each crawl its own)")
	tmp := flag.String("tmp", os.TempDir(), "`DIR` for the crawl's originals while they are committed")
	noCompact := flag.Bool("no-compact", false, "commit only: leave the compaction")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the commit and the compaction to `FILE`")
	full := flag.Bool("full", false, "commit nothing: merge every partition's runs into one")
	join := flag.Bool("join", false, "commit nothing: join the crawl's originals with the index, as a run --index does")
	flag.Parse()
	if *index == "" || *crawl == "" && !*full {
		fmt.Fprintln(os.Stderr, "indexcommit: -index and -crawl are required")
		os.Exit(2)
	}
	if err := startProfile(*profile); err != nil {
		fmt.Fprintln(os.Stderr, "indexcommit:", err)
		os.Exit(1)
	}
	var err error
	switch {
	case *full:
		err = compactFull(*index)
	case *join:
		err = joinCrawl(*index, *crawl, *n, *seed, *tmp)
	default:
		err = run(*index, *crawl, *n, *seed, *tmp, *noCompact)
	}
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "indexcommit:", err)
		os.Exit(1)
	}
}

// startProfile starts a CPU profile to the named file, if any.
func startProfile(name string) error {
	if name == "" {
		return nil
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return pprof.StartCPUProfile(f)
}

// joinCrawl joins a crawl's originals with the index, and says how long
// it took: seconds, index lines read, lines matched.
func joinCrawl(index, crawl string, n int64, seed uint64, tmp string) error {
	name := filepath.Join(tmp, crawl+".originals")
	defer os.Remove(name)
	if err := write(name, crawl, n, seed); err != nil {
		return err
	}
	ix, err := crawlindex.Open(index)
	if err != nil {
		return err
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	st, err := ix.Join(context.Background(), bufio.NewReaderSize(f, 256<<10), name, io.Discard)
	if err != nil {
		return err
	}
	fmt.Printf("join %.3f %d %d\n", time.Since(start).Seconds(), st.IndexLines, st.Matched)
	return nil
}

// compactFull merges every partition's runs into one, and says how long
// it took: seconds, lines, the index's bytes.
func compactFull(index string) error {
	_, st, err := crawlindex.Compact(index, crawlindex.CompactOptions{Full: true})
	if err != nil {
		return err
	}
	size, err := generationBytes(index)
	if err != nil {
		return err
	}
	fmt.Printf("full %.3f %d %d\n", st.Took.Seconds(), st.Lines, size)
	return nil
}

func run(index, crawl string, n int64, seed uint64, tmp string, noCompact bool) error {
	name := filepath.Join(tmp, crawl+".originals")
	defer os.Remove(name)
	if err := write(name, crawl, n, seed); err != nil {
		return err
	}
	var before int64
	if ix, err := crawlindex.Open(index); err == nil {
		before = ix.Registry.Totals().Originals
	}
	start := time.Now()
	_, err := crawlindex.CommitWith(index, crawlindex.Change{Add: &crawlindex.Crawl{Name: crawl, Location: "/nowhere/" + crawl}, Originals: name},
		crawlindex.CommitOptions{NoCompact: true})
	if err != nil {
		return err
	}
	commit := time.Since(start)
	var st crawlindex.CompactStats
	if !noCompact {
		if _, st, err = crawlindex.Compact(index, crawlindex.CompactOptions{}); err != nil {
			return err
		}
	}
	size, err := generationBytes(index)
	if err != nil {
		return err
	}
	fmt.Printf("%s %d %d %.3f %.3f %d %d %d\n", crawl, n, before, commit.Seconds(), st.Took.Seconds(), st.Lines, st.Generations, size)
	return nil
}

// generationBytes are the bytes of the files of the index's current
// generation.
func generationBytes(index string) (int64, error) {
	cur, err := os.ReadFile(filepath.Join(index, "CURRENT"))
	if err != nil {
		return 0, err
	}
	var total int64
	err = filepath.WalkDir(filepath.Join(index, string(cur[:len(cur)-1])), func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			total += fi.Size()
		}
		return err
	})
	return total, err
}

// sortedAlphabet is base32's alphabet in byte order: a digest written
// with it sorts as its value does.
const sortedAlphabet = "234567ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// write writes n originals of the crawl, sorted on digest: the digests
// rise by a random step (spread evenly over every partition), each line a
// response of one of 1000 files, as warcsum lists them (about 140 bytes).
func write(name, crawl string, n int64, seed uint64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	stride := ^uint64(0) / uint64(n)
	offsets := make([]int64, 1000)
	var line []byte
	for i := range n {
		high := uint64(i)*stride + rng.Uint64N(stride)
		file := rng.IntN(len(offsets))
		length := 500 + rng.Int64N(60000)
		line = append(line[:0], crawl...)
		line = fmt.Appendf(line, "/%s-%05d.warc.gz ", crawl, file)
		line = strconv.AppendInt(line, offsets[file], 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, length, 10)
		line = fmt.Appendf(line, " http://www.example.com/%s/page/%d 2024-%02d-%02dT%02d:%02d:%02dZ sha1:", crawl, i,
			1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
		// 160 bits: the 64 that rise, then 96 at random.
		low := rng.Uint64()
		low2 := rng.Uint32()
		for k := range 32 {
			var v uint64
			switch bit := k * 5; {
			case bit+5 <= 64:
				v = high >> (59 - bit)
			case bit < 64:
				v = high<<(bit-59) | low>>(123-bit)
			case bit+5 <= 128:
				v = low >> (123 - bit)
			default:
				v = uint64(low2) >> (155 - bit)
			}
			line = append(line, sortedAlphabet[v&31])
		}
		line = append(line, '\n')
		offsets[file] += length
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
