// Package waczgen packages a generated collection (package scripts/gen)
// as WACZ files, as Browsertrix crawls are kept: several crawls, each one
// or more WACZ packages (crawler instances), with a plain or ZipNum
// index, and a multi-WACZ JSON listing them as Browsertrix exports a
// collection. The expected deduplication names records by the WACZ
// member naming of package wacz ("crawl-1-0.wacz#archive/gen-00001.warc.gz").
package waczgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"warcdedup/manifest"
	"warcdedup/scripts/gen"
	"warcdedup/wacz"
)

// Config says how to package.
type Config struct {
	// Packages is how many WACZ files to make (at least 1, at most the
	// number of WARC files); the WARC files are dealt out in order, so
	// that with gen.Config.Sequential each package is a stretch of time.
	Packages int
	// Crawls groups the packages, in order, into that many crawls
	// (default: one crawl per package); crawl k is "crawl-k".
	Crawls int
	// ZipNum chooses each package's index form: "plain" (index.cdxj),
	// "zipnum" (index.cdx.gz + index.idx), or "mixed" (every other
	// package ZipNum). LinesPerBlock is the ZipNum block size (default
	// 256, as Browsertrix).
	Index         string
	LinesPerBlock int
	// CollectionJSON, if set, is the name of a multi-WACZ JSON file to
	// write beside the packages.
	CollectionJSON string
	// Prefix starts each package's name (default "crawl").
	Prefix string
	// KeepWARCs keeps the WARC files beside the packages (by default
	// they are removed once packaged).
	KeepWARCs bool
}

// Package is one WACZ file written.
type Package struct {
	Name    string // file name in the directory
	CrawlID string
	WARCs   []string // the WARC files it holds, base names
	ZipNum  bool
	Size    int64
	SHA256  string // hex
}

// Collection is what Write made.
type Collection struct {
	Packages []Package
}

// Write packages the files res describes, in dir, and renames the
// records of res.Expected to their WACZ member names (re-sorted by
// digest as the manifest order wants).
func Write(dir string, res *gen.Result, cfg Config) (*Collection, error) {
	if cfg.Packages <= 0 {
		cfg.Packages = 1
	}
	if cfg.Packages > len(res.Names) {
		return nil, fmt.Errorf("%d packages of %d WARC files", cfg.Packages, len(res.Names))
	}
	if cfg.Crawls <= 0 || cfg.Crawls > cfg.Packages {
		cfg.Crawls = cfg.Packages
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "crawl"
	}
	switch cfg.Index {
	case "", "plain", "zipnum", "mixed":
	default:
		return nil, fmt.Errorf("index form %q: want plain, zipnum or mixed", cfg.Index)
	}
	for _, n := range res.Names {
		if !isWARC(n) {
			return nil, fmt.Errorf("%s: a WACZ holds WARC files only (generate with -formats of WARC only)", n)
		}
	}
	coll := &Collection{}
	memberOf := map[string]string{} // WARC file -> its member name
	created := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	inCrawl := map[int]int{} // packages so far of each crawl
	for i := range cfg.Packages {
		lo, hi := i*len(res.Names)/cfg.Packages, (i+1)*len(res.Names)/cfg.Packages
		crawl := i * cfg.Crawls / cfg.Packages
		p := Package{Name: fmt.Sprintf("%s-%d-%d.wacz", cfg.Prefix, crawl, inCrawl[crawl]), CrawlID: fmt.Sprintf("crawl-%d", crawl), WARCs: res.Names[lo:hi]}
		inCrawl[crawl]++
		p.ZipNum = cfg.Index == "zipnum" || cfg.Index == "mixed" && i%2 == 1
		var paths []string
		for _, n := range p.WARCs {
			paths = append(paths, filepath.Join(dir, n))
			memberOf[n] = wacz.JoinName(p.Name, "archive/"+n)
		}
		if err := writePackage(filepath.Join(dir, p.Name), paths, p.ZipNum, cfg.LinesPerBlock, created.AddDate(0, crawl, 0)); err != nil {
			return nil, err
		}
		if err := hashFile(filepath.Join(dir, p.Name), &p); err != nil {
			return nil, err
		}
		coll.Packages = append(coll.Packages, p)
	}
	if !cfg.KeepWARCs {
		for _, n := range res.Names {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return nil, err
			}
		}
	}
	if cfg.CollectionJSON != "" {
		var entries []wacz.CollectionEntry
		for _, p := range coll.Packages {
			entries = append(entries, wacz.CollectionEntry{Name: p.Name, Path: p.Name, Hash: p.SHA256, Size: p.Size, CrawlID: p.CrawlID})
		}
		f, err := os.Create(filepath.Join(dir, cfg.CollectionJSON))
		if err != nil {
			return nil, err
		}
		err = wacz.WriteCollection(f, entries)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	renameExpected(res, memberOf)
	return coll, nil
}

func isWARC(name string) bool {
	for _, ext := range []string{".warc", ".warc.gz"} {
		if len(name) > len(ext) && name[len(name)-len(ext):] == ext {
			return true
		}
	}
	return false
}

// writePackage writes one package through a temporary file.
func writePackage(dst string, warcs []string, zipNum bool, linesPerBlock int, created time.Time) error {
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-waczgen-*")
	if err != nil {
		return err
	}
	_, err = wacz.Create(f, wacz.CreateOptions{WARCs: warcs, ZipNum: zipNum, LinesPerBlock: linesPerBlock,
		Software: "warcdedup warcgen", Title: filepath.Base(dst), Created: created, TempDir: filepath.Dir(dst)})
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return nil
}

func hashFile(name string, p *Package) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	p.Size, p.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// renameExpected names the expected lines' files by their WACZ members
// and sorts the lines (and their payloads) by digest again.
func renameExpected(res *gen.Result, memberOf map[string]string) {
	for i := range res.Expected {
		if m, ok := memberOf[res.Expected[i].File]; ok {
			res.Expected[i].File = manifest.EscapeFile(m)
		}
	}
	idx := make([]int, len(res.Expected))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return manifest.ByDigest.Compare(&res.Expected[a], &res.Expected[b]) })
	lines := make([]manifest.Line, len(idx))
	payloads := make([]gen.Payload, len(idx))
	for i, j := range idx {
		lines[i] = res.Expected[j]
		if j < len(res.Payloads) {
			payloads[i] = res.Payloads[j]
		}
	}
	res.Expected, res.Payloads = lines, payloads
}
