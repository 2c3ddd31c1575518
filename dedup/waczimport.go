package dedup

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"warcdedup/crawlindex"
	"warcdedup/internal/fspath"
	"warcdedup/wacz"
)

// warcdedup index import from WACZ files and multi-WACZ JSON (issue 23):
// as Browsertrix's indexer, each package's CDXJ is read (plain
// index.cdxj, or ZipNum index.cdx.gz, inflated block after block), no
// WARC byte: every 200 response with a SHA-1 digest becomes an original
// (revisits in the CDXJ are not), named by its package and its offset
// in it (the WARC members are stored: a record at offset O of member M
// is at M's data offset + O of the package), as the Redis import names
// them. A run reads such an original from the package by range, and
// compares its bytes with its duplicate's before it writes any revisit.
// The crawl is --crawl, or else each package's crawlId in the JSON: a
// JSON of several crawls imports each as its own crawl, in name order.

// isPackageImport reports whether an import is named WACZ files or
// multi-WACZ JSON rather than CDX/CDXJ indexes.
func isPackageImport(operands []string) bool {
	for _, op := range operands {
		if isPackageOperand(op) {
			return true
		}
	}
	return false
}

// importPackage is a package to import, and its crawl.
type importPackage struct {
	path, name, crawl string
	size              int64 // the JSON's, 0 for none
}

// importPackages commits the crawls of the packages named.
func importPackages(ctx context.Context, opt ImportOptions, iopt crawlindex.ImportOptions) (crawlindex.ImportStats, error) {
	var total crawlindex.ImportStats
	pkgs, root, err := packagesToImport(opt)
	if err != nil {
		return total, err
	}
	byCrawl := map[string][]importPackage{}
	for _, p := range pkgs {
		byCrawl[p.crawl] = append(byCrawl[p.crawl], p)
	}
	for _, crawl := range slices.Sorted(maps.Keys(byCrawl)) {
		st, err := importCrawlPackages(ctx, opt.Index, crawl, root, byCrawl[crawl], iopt)
		total.Lines += st.Lines
		total.Records += st.Records
		total.Imported += st.Imported
		total.Skipped += st.Skipped
		total.Damaged += st.Damaged
		if err != nil {
			return total, fmt.Errorf("crawl %s: %w", crawl, err)
		}
	}
	return total, nil
}

// packagesToImport lists the packages the operands name, each with its
// crawl, and the directory their names are relative to (the crawl's
// location): the JSON's, or --location, or that of the packages.
func packagesToImport(opt ImportOptions) ([]importPackage, string, error) {
	var pkgs []importPackage
	root := ""
	if opt.Location != "" {
		var err error
		if root, err = fspath.Abs(opt.Location); err != nil {
			return nil, "", err
		}
	}
	setRoot := func(dir, why string) error {
		if root == "" {
			root = dir
		} else if !crawlindex.Within(dir, root) {
			return fmt.Errorf("%s is not beneath %s: the packages of one import are in one directory (--location)", why, root)
		}
		return nil
	}
	for _, op := range opt.CDX {
		abs, err := fspath.Abs(op)
		if err != nil {
			return nil, "", err
		}
		if !wacz.IsWACZ(abs) {
			if !isPackageOperand(abs) {
				return nil, "", fmt.Errorf("%s: neither a WACZ file nor a multi-WACZ JSON: CDX/CDXJ indexes are imported apart from packages", op)
			}
			in, err := readMultiWACZ(abs)
			if err != nil {
				return nil, "", err
			}
			if err := setRoot(in.root, abs); err != nil {
				return nil, "", err
			}
			for i, e := range in.entries {
				crawl := opt.Crawl
				if crawl == "" {
					crawl = e.CrawlID
				}
				if crawl == "" {
					return nil, "", fmt.Errorf("%s: resource %d (%s) has no crawlId: name the crawl (--crawl)", abs, i+1, e.Path)
				}
				pkgs = append(pkgs, importPackage{path: in.paths[i], crawl: crawl, size: e.Size})
			}
			continue
		}
		if opt.Crawl == "" {
			return nil, "", fmt.Errorf("%s: name the crawl of WACZ files (--crawl), or import them through a multi-WACZ JSON with their crawlId", op)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, "", err
		}
		if !fi.Mode().IsRegular() {
			return nil, "", fmt.Errorf("%s: not a regular file", op)
		}
		if err := setRoot(filepath.Dir(abs), abs); err != nil {
			return nil, "", err
		}
		pkgs = append(pkgs, importPackage{path: abs, crawl: opt.Crawl})
	}
	seen := map[string]bool{}
	for i := range pkgs {
		if !crawlindex.Within(pkgs[i].path, root) {
			return nil, "", fmt.Errorf("%s is not beneath %s, the crawl's location", pkgs[i].path, root)
		}
		rel, _ := filepath.Rel(root, pkgs[i].path)
		pkgs[i].name = filepath.ToSlash(rel)
		if seen[pkgs[i].name] {
			return nil, "", fmt.Errorf("%s named twice", pkgs[i].path)
		}
		seen[pkgs[i].name] = true
	}
	return pkgs, root, nil
}

// importCrawlPackages commits one crawl from its packages' indexes.
func importCrawlPackages(ctx context.Context, index, crawl, root string, pkgs []importPackage, iopt crawlindex.ImportOptions) (crawlindex.ImportStats, error) {
	var readers []io.Reader
	var names []string
	var of []*wacz.Package // the package of each index
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, ip := range pkgs {
		if ip.size > 0 {
			if fi, err := os.Stat(ip.path); err != nil || fi.Size() != ip.size {
				return crawlindex.ImportStats{}, fmt.Errorf("%s: not the package the JSON names (%d bytes there, %v)", ip.path, ip.size, sizeOrErr(fi, err))
			}
		}
		p, err := wacz.Open(ip.path)
		if err != nil {
			return crawlindex.ImportStats{}, err
		}
		p.Name = ip.name
		closers = append(closers, p)
		ixs, err := p.Indexes()
		if err != nil {
			return crawlindex.ImportStats{}, fmt.Errorf("%s: %w", ip.path, err)
		}
		if len(ixs) == 0 {
			return crawlindex.ImportStats{}, fmt.Errorf("%s: no CDXJ index in indexes/", ip.path)
		}
		for _, ix := range ixs {
			rc := p.IndexReader(ix)
			closers = append(closers, rc)
			readers = append(readers, rc)
			names = append(names, wacz.JoinName(ip.name, ix.CDX.Name))
			of = append(of, p)
		}
	}
	iopt.Crawl, iopt.Location = crawl, root
	iopt.Locate = func(i int, filename string) (string, int64, error) {
		p := of[i]
		m := p.Member("archive/" + filename)
		if m == nil {
			return "", 0, fmt.Errorf("the index names %s, which %s does not hold", "archive/"+filename, p.Name)
		}
		if m.Method != 0 { // zip.Store
			return "", 0, fmt.Errorf("%s: %s is compressed by ZIP: WARC members of a WACZ are stored", p.Name, m.Name)
		}
		return p.Name, m.DataOffset, nil
	}
	_, st, err := crawlindex.Import(ctx, index, iopt, readers, names)
	return st, err
}

func sizeOrErr(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d bytes the file's", fi.Size())
}

// IsPackageImport is isPackageImport, for warcdedup index import's
// flags: WACZ files and multi-WACZ JSON need no --location, and JSON no
// --crawl.
func IsPackageImport(operands []string) bool { return isPackageImport(operands) }
