package redisindex

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/crawlindex"
	"warcdedup/manifest"
)

// requires are what a staged crawl's revisits need, as the index records
// it: each crawl whose originals they refer to (found as the crawler
// finds them: the crawl itself first, then alldupes), how many revisits,
// and the files holding those originals. The files are found by looking
// the digests up in that crawl's originals (staged by this import, or
// committed to the index), not by the WACZ index of the crawler's entry:
// Browsertrix's indexer writes 0 there for every WACZ of a crawl, and a
// file named wrongly is a file someone may delete. Only a crawl that is
// neither imported nor in the index is taken at its entries' word (and
// said so).
func (im *importer) requires(ctx context.Context, p *crawlImport, plans []*crawlImport, tmp string) ([]crawlindex.Need, error) {
	if len(p.needs) == 0 {
		return nil, nil
	}
	sorted := p.refs + ".sorted"
	if err := im.opt.Sort(ctx, "LC_ALL=C sort -u", p.refs, sorted); err != nil {
		return nil, err
	}
	f, err := os.Open(sorted)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	staged := map[string]*crawlImport{}
	for _, q := range plans {
		staged[q.name] = q
	}
	found := map[string]map[string]bool{} // crawl -> files holding the originals
	group := &refGroup{name: filepath.Join(tmp, p.name+".group")}
	flush := func() error {
		if group.crawl == "" {
			return nil
		}
		files, missing, err := im.lookUp(ctx, group, staged[group.crawl])
		if err != nil {
			return err
		}
		if missing {
			// A digest without an original there (the entry's record is
			// no 2xx response): the files the entries name count too.
			for name := range p.needs[group.crawl].named {
				files[name] = true
			}
		}
		found[group.crawl] = files
		return nil
	}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		crawl, digest, ok := strings.Cut(s.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("%s: %q", sorted, s.Text())
		}
		if crawl != group.crawl {
			if err := flush(); err != nil {
				return nil, err
			}
			if err := group.start(crawl); err != nil {
				return nil, err
			}
		}
		if err := group.add(digest); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	var out []crawlindex.Need
	for _, crawl := range slices.Sorted(maps.Keys(p.needs)) {
		infos, err := im.filesOf(crawl, staged[crawl])
		if err != nil {
			return nil, err
		}
		need := crawlindex.Need{Crawl: crawl, Revisits: p.needs[crawl].revisits}
		for _, fi := range infos {
			if found[crawl][fi.Name] {
				need.Files = append(need.Files, fi)
			}
		}
		out = append(out, need)
	}
	return out, nil
}

// refGroup is the sorted digests of the revisits that refer to one
// crawl, written as manifest lines (what Index.Join reads).
type refGroup struct {
	name  string
	crawl string
	f     *os.File
	w     *manifest.Writer
	n     int64
}

func (g *refGroup) start(crawl string) error {
	if g.f != nil {
		g.f.Close()
	}
	f, err := os.Create(g.name)
	if err != nil {
		return err
	}
	g.crawl, g.f, g.w, g.n = crawl, f, manifest.NewWriter(f), 0
	return nil
}

func (g *refGroup) add(digest string) error {
	g.n++
	return g.w.Write(&manifest.Line{File: "revisit", Offset: 0, Length: 1, URI: "-", Date: "-", Digest: digest, Fields: 6})
}

// lookUp finds the files of crawl that hold an original of the group's
// digests: in its staged originals, or the index's; missing says a
// digest has none there (or the crawl is in neither).
func (im *importer) lookUp(ctx context.Context, g *refGroup, staged *crawlImport) (map[string]bool, bool, error) {
	if err := g.w.Flush(); err != nil {
		return nil, false, err
	}
	if err := g.f.Close(); err != nil {
		return nil, false, err
	}
	g.f = nil
	files := map[string]bool{}
	var matched string // the originals of the group's digests, in digest order
	switch {
	case staged != nil:
		matched = staged.originals
	case im.ix.Registry.Crawl(g.crawl) != nil:
		in, err := os.Open(g.name)
		if err != nil {
			return nil, false, err
		}
		defer in.Close()
		matched = g.name + ".matched"
		out, err := os.Create(matched)
		if err != nil {
			return nil, false, err
		}
		_, err = im.ix.Join(ctx, in, g.name, out)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, false, err
		}
	default:
		im.opt.Warn(fmt.Errorf("revisits need crawl %s, which is neither imported nor in the index: its files are taken as its entries name them", g.crawl))
		return files, true, nil
	}
	// Merge the group's digests with the originals: the first original of
	// the crawl with each digest.
	gr, err := os.Open(g.name)
	if err != nil {
		return nil, false, err
	}
	defer gr.Close()
	mr, err := os.Open(matched)
	if err != nil {
		return nil, false, err
	}
	defer mr.Close()
	want := manifest.NewReader(gr, g.name)
	have := manifest.NewReader(mr, matched)
	var h manifest.Line
	hok := false
	next := func() error {
		for {
			l, err := have.Next()
			if err == io.EOF {
				hok = false
				return nil
			}
			if err != nil {
				return err
			}
			if crawlindex.CrawlOf(l.File) == g.crawl {
				h, hok = l, true
				return nil
			}
		}
	}
	if err := next(); err != nil {
		return nil, false, err
	}
	missing := false
	for {
		w, err := want.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
		for hok && h.Digest < w.Digest {
			if err := next(); err != nil {
				return nil, false, err
			}
		}
		if !hok || h.Digest != w.Digest {
			missing = true
			continue
		}
		name, err := manifest.UnescapeFile(strings.TrimPrefix(h.File, g.crawl+"/"))
		if err != nil {
			return nil, false, err
		}
		files[name] = true
	}
	return files, missing, nil
}

// filesOf are a needed crawl's files with their size and SHA-256: as
// staged, as the index has them, or as its WACZ list gives them.
func (im *importer) filesOf(crawl string, staged *crawlImport) ([]crawlindex.FileInfo, error) {
	if staged != nil {
		return staged.files, nil
	}
	if im.ix.Registry.Crawl(crawl) != nil {
		return im.ix.Files(crawl)
	}
	list, err := im.waczList(crawl)
	if err != nil {
		return nil, err
	}
	var out []crawlindex.FileInfo
	for _, w := range list {
		out = append(out, crawlindex.FileInfo{Name: w.Filename, Size: w.Size, SHA256: w.Hash})
	}
	return out, nil
}
