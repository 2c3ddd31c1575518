package reindex

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/rewritelog"
)

// benchInput is an index of n warcio.js CDXJ lines over 100 files, sorted
// by urlkey, and a log that makes 30% of its records revisits (what
// scripts/cdxgen writes, at 10 million lines, for scripts/bench-cdx.sh).
func benchInput(n int) (index, log []byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	const files = 100
	next := make([]int64, files)
	var chosen [files][][2]int64
	var b bytes.Buffer
	for i := range n {
		f := rng.IntN(files)
		length := 500 + rng.Int64N(40000)
		off := next[f]
		next[f] += length
		fmt.Fprintf(&b, `com,example,host%04d)/path/page-%09d.html 20240601120000 {"url":"https://host.example.com/path/page-%09d.html","mime":"text/html","status":"200","digest":"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567","length":"%d","offset":"%d","filename":"crawl-%05d.warc.gz"}`+"\n",
			i/1000, i, i, length, off, f)
		if rng.IntN(10) < 3 {
			chosen[f] = append(chosen[f], [2]int64{off, length})
		}
	}
	var l []byte
	l = append(rewritelog.AppendRun(l, time.Unix(0, 0)), '\n')
	for f := range files {
		var shift int64
		for _, c := range chosen[f] {
			e := rewritelog.Entry{File: fmt.Sprintf("crawl-%05d.warc.gz", f), OldOffset: c[0], OldLength: c[1], NewOffset: c[0] + shift, NewLength: 530,
				Kind: rewritelog.Revisit, PayloadDigest: "sha1:ZYXWVUTSRQPONMLKJIHGFEDCBA765432", RefersToURI: "https://host.example.com/" + strconv.Itoa(f), RefersTo: "2024-06-01T00:00:00Z"}
			shift += 530 - c[1]
			l = append(e.AppendTo(l), '\n')
		}
	}
	return b.Bytes(), l
}

// BenchmarkUpdate updates a CDXJ index of 200,000 lines, 30% of them
// rewritten, writing it to io.Discard (the log is loaded once).
func BenchmarkUpdate(b *testing.B) {
	index, log := benchInput(200000)
	moves, err := rewritelog.Load(rewritelog.NewReader(bytes.NewReader(log), "log"), time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(index)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		j := &Copy{Updater: Updater{Moves: moves}, Out: cdx.NewWriter(io.Discard)}
		if err := j.Index(bytes.NewReader(index), "index"); err != nil {
			b.Fatal(err)
		}
		j.Out.Flush()
		if j.Problems > 0 || j.Stats.Revisits == 0 {
			b.Fatalf("%d problems, %+v", j.Problems, j.Stats)
		}
		lines += int(j.Stats.Lines)
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkLoadLog reads a log of 60,000 entries into memory.
func BenchmarkLoadLog(b *testing.B) {
	_, log := benchInput(200000)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	entries := 0
	for b.Loop() {
		m, err := rewritelog.Load(rewritelog.NewReader(bytes.NewReader(log), "log"), time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		entries += m.Entries()
	}
	b.ReportMetric(float64(entries)/b.Elapsed().Seconds(), "entries/s")
	_ = strings.Count
}

// BenchmarkInPlaceZipNum updates in place a ZipNum of the same 200,000
// lines in Browsertrix's style (256 lines a block): every block read and
// checked against its summary, the lines re-sorted where they must be,
// the changed blocks compressed again, both files written and synced.
func BenchmarkInPlaceZipNum(b *testing.B) {
	index, log := benchInput(200000)
	moves, err := rewritelog.Load(rewritelog.NewReader(bytes.NewReader(log), "log"), time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	var blocks, idx bytes.Buffer
	w := cdx.NewZipNumWriter(&blocks, &idx, cdx.BrowsertrixStyle)
	for _, l := range bytes.Split(bytes.TrimSuffix(index, []byte("\n")), []byte("\n")) {
		w.WriteLine(l)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	src := &Index{Path: filepath.Join(dir, "src.idx"), Form: ZipNum, Parts: []Part{{Name: "index.cdx.gz", Path: filepath.Join(dir, "src.cdx.gz")}}}
	dst := &Index{Path: filepath.Join(dir, "index.idx"), Form: ZipNum, Parts: []Part{{Name: "index.cdx.gz", Path: filepath.Join(dir, "index.cdx.gz")}}}
	os.WriteFile(src.Path, idx.Bytes(), 0o644)
	os.WriteFile(src.Parts[0].Path, blocks.Bytes(), 0o644)
	b.SetBytes(int64(len(index)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		p := &InPlace{Updater: Updater{Moves: moves}}
		if err := p.Rewrite(src, dst); err != nil {
			b.Fatal(err)
		}
		if p.Stats.Revisits == 0 || p.BlocksRewritten == 0 {
			b.Fatalf("%+v", p.Stats)
		}
		lines += int(p.Stats.Lines)
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}
