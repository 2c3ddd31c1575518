package crawlindex

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"warcdedup/fixity"
	"warcdedup/internal/ctime"
	"warcdedup/manifest"
)

// VerifyStats counts what Verify read and found.
type VerifyStats struct {
	Partitions int64
	Runs       int64 // the partitions' sorted runs
	Originals  int64
	Crawls     int64
	Files      int64
	Problems   int64
}

// Verify checks the committed generation: every run of every partition is
// sorted on digest, holds only digests of its range and lines of
// committed crawls, as many per crawl as the registry says, and has the
// SHA-256 it was written with; every committed crawl's files
// are there, unchanged since the commit (their stamp; with deep, their
// SHA-256, which reads them all); and every crawl its revisits need is
// still committed, with the files they need. Each problem goes to report;
// the error is one that stopped the check.
func (ix *Index) Verify(deep bool, report func(string)) (VerifyStats, error) {
	return ix.verify(deep, true, report)
}

// VerifyIndex checks the index's own files as Verify does, and not the
// crawls' files: every partition read, sorted, of its range, with the
// SHA-256 it was committed with and as many originals per crawl as the
// registry says, and every crawl's list of files whole.
func (ix *Index) VerifyIndex(report func(string)) (VerifyStats, error) {
	return ix.verify(false, false, report)
}

func (ix *Index) verify(deep, crawlFiles bool, report func(string)) (VerifyStats, error) {
	var st VerifyStats
	problem := func(format string, args ...any) {
		st.Problems++
		report(fmt.Sprintf(format, args...))
	}
	if !ix.Exists() {
		return st, fmt.Errorf("%s: %w", ix.Dir, ErrNoIndex)
	}
	if want := fmt.Sprintf("%s%06d", genPrefix, ix.Registry.Generation); filepath.Base(ix.gen) != want {
		problem("CURRENT names %s, its registry says generation %d", filepath.Base(ix.gen), ix.Registry.Generation)
	}
	perCrawl, err := ix.verifyPartitions(&st, problem)
	if err != nil {
		return st, err
	}
	for _, c := range ix.Registry.Crawls {
		st.Crawls++
		if perCrawl[c.Name] != c.Originals {
			problem("crawl %s: %d originals in the partitions, the registry says %d", c.Name, perCrawl[c.Name], c.Originals)
		}
		delete(perCrawl, c.Name)
		files, err := ix.Files(c.Name)
		if err != nil {
			problem("%v", err)
			continue
		}
		st.Files += int64(len(files))
		if !crawlFiles {
			continue
		}
		for _, f := range files {
			if why := checkFile(c.Location, f, deep); why != "" {
				problem("crawl %s: %s: %s", c.Name, f.Name, why)
			}
		}
		for _, n := range c.Requires {
			need := ix.Registry.Crawl(n.Crawl)
			if need == nil {
				gone := ""
				for _, f := range n.Files {
					r := ix.Registry.RemovedCrawl(n.Crawl)
					if r == nil {
						break
					}
					why := checkFile(r.Location, f, false)
					if why == "" {
						continue
					}
					// Gone, or there and changed (an undo of the crawl
					// wrote it anew, its responses kept): only a file
					// that is gone took the originals with it.
					if _, err := os.Stat(filepath.Join(r.Location, filepath.FromSlash(f.Name))); errors.Is(err, fs.ErrNotExist) {
						gone = fmt.Sprintf("; %s is gone: the originals of its revisits are lost", f.Name)
					} else {
						gone = fmt.Sprintf("; %s is not the file they were written against (%s): whether it still holds their originals is not known", f.Name, why)
					}
					break
				}
				problem("crawl %s: %d revisits need crawl %s, which is no longer committed%s", c.Name, n.Revisits, n.Crawl, gone)
				continue
			}
			for _, f := range n.Files {
				if why := checkFile(need.Location, f, deep); why != "" {
					problem("crawl %s: its revisits need %s of crawl %s: %s", c.Name, f.Name, n.Crawl, why)
				}
			}
		}
	}
	for name, n := range perCrawl {
		problem("%d originals of crawl %s, which is not committed", n, name)
	}
	return st, nil
}

// verifyPartitions reads every partition, its runs merged (each run
// hashed as it is read), and counts the originals per crawl.
func (ix *Index) verifyPartitions(st *VerifyStats, problem func(string, ...any)) (map[string]int64, error) {
	parts, err := ix.partitions()
	if err != nil {
		return nil, err
	}
	perCrawl := map[string]int64{}
	for _, p := range parts {
		st.Partitions++
		st.Runs += int64(len(p.runs))
		if err := ix.verifyPartition(p, st, perCrawl, problem); err != nil {
			return nil, err
		}
	}
	return perCrawl, nil
}

// verifyPartition reads each run of a partition, checking its lines and
// its SHA-256. (A line in two runs is found by the count of its crawl's
// originals.)
func (ix *Index) verifyPartition(p *partition, st *VerifyStats, perCrawl map[string]int64, problem func(string, ...any)) error {
	for _, r := range p.runs {
		f, err := os.Open(r.path)
		if err != nil {
			return err
		}
		h := fixity.New(contentsAlgorithm)
		in := manifest.NewReader(io.TeeReader(f, h), r.path)
		in.RequireFields(6)
		in.RequireOrder(manifest.ByDigest)
		rr := &runReader{run: r, f: f, in: in}
		whole := true
		for {
			if err := rr.next(); err != nil {
				problem("%v", err)
				whole = false
				break
			}
			if !rr.ok {
				break
			}
			st.Originals++
			perCrawl[CrawlOf(rr.line.File)]++
		}
		rr.close()
		if whole && ix.contents != nil {
			if why := ix.contents.check(r.rel(), h.Size(), h.Sum(contentsAlgorithm)); why != "" {
				problem("%s/%s: %s", filepath.Base(ix.gen), r.rel(), why)
			}
		}
	}
	return nil
}

// checkFile says what is wrong with a committed file, "" if nothing: it is
// missing, has another size, or (with deep) another SHA-256; a file whose
// stamp changed but whose bytes are the same is fine with deep.
func checkFile(location string, f FileInfo, deep bool) string {
	if strings.Contains(location, "://") {
		return "" // served over HTTP: not checked from here
	}
	path := filepath.Join(location, filepath.FromSlash(f.Name))
	fi, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	if fi.Size() != f.Size {
		return fmt.Sprintf("%d bytes, %d when committed", fi.Size(), f.Size)
	}
	if deep && f.SHA256 != "" {
		h, err := fixity.HashFile(path, contentsAlgorithm)
		if err != nil {
			return err.Error()
		}
		if sum := h.Sum(contentsAlgorithm); sum != f.SHA256 {
			return fmt.Sprintf("SHA-256 %s, %s when committed", sum, f.SHA256)
		}
		return ""
	}
	if f.Stamp != "" && Stamp(fi) != f.Stamp {
		if f.SHA256 == "" {
			// Imported, or recorded by an older version: --deep reads
			// the originals the index has in it (VerifyOriginals).
			return "changed since it was committed (its size, times or inode differ), and the index records no SHA-256 of it to compare: --deep reads the originals the index has in it at their places"
		}
		return "changed since it was committed (its size, times or inode differ; --deep compares its SHA-256)"
	}
	return ""
}

// Stamp identifies a file as it is: size, modification and change times,
// inode and device. A file with the stamp it had is unchanged: its change
// time moves with every write, and no user can set it back.
func Stamp(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return strings.Join([]string{strconv.FormatInt(fi.Size(), 10), strconv.FormatInt(fi.ModTime().UnixNano(), 10),
		strconv.FormatInt(ctime.Of(st), 10), strconv.FormatUint(st.Ino, 10), strconv.FormatUint(uint64(st.Dev), 10)}, " ")
}
