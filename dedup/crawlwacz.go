package dedup

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/gzfile"
	"warcdedup/manifest"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// A crawl of WACZ packages with a crawl index (run --index, issue 23): a
// directory of WACZ files (beside WARC files or not), WACZ files named
// (--crawl), or a multi-WACZ JSON (the crawl its resources' crawlId, or
// --crawl). The run works on the packages' WARC members, named
// CRAWL/PATH.wacz#archive/NAME, as any run does (dedup/wacz.go); what
// the index keeps of the crawl is its packages, as warcdedup index
// import of WACZ files keeps them: the crawl's files are the packages
// (size, SHA-256 and stamp of each whole package), and each original is
// named CRAWL/PATH.wacz at its offset in the package (the member's data
// offset plus the record's: the members are stored). A later crawl so
// reads a committed crawl's originals by range from its packages, and
// its revisits of them carry WARC-Refers-To-Container: file://NAME.wacz,
// and its packages list those packages in relation.requires with their
// SHA-256, size and crawl (stage.PackageRewrite.External): committed
// crawls are never rewritten, so that entry stays right.

// usePackages takes the packages a crawl was named: only these are the
// crawl's, and the crawl is named by --crawl, or by the crawlId the
// JSON gives every one of them.
func (c *crawlMode) usePackages(in *packageInput) error {
	c.packages = in.selected()
	if c.name != "" {
		return nil
	}
	ids := map[string]bool{}
	for _, e := range in.entries {
		ids[e.CrawlID] = true
	}
	switch {
	case in.json == "":
		return fmt.Errorf("%s: name the crawl of WACZ files (--crawl)", in.source)
	case len(ids) != 1 || ids[""]:
		return fmt.Errorf("%s: its resources are not all of one crawl (crawlId %q): name the crawl (--crawl), or run each crawl's packages apart", in.json, slices.Sorted(maps.Keys(ids)))
	}
	for id := range ids {
		c.name = id
	}
	return nil
}

// sharesPackages refuses a crawl named as packages when one of them is a
// file of the committed crawl k (crawls of packages may share a
// directory, never a package).
func (c *crawlMode) sharesPackages(ix *crawlindex.Index, k *crawlindex.Crawl) error {
	if !within(c.root, k.Location) && !within(k.Location, c.root) {
		return nil
	}
	files, err := ix.Files(k.Name)
	if err != nil {
		return fmt.Errorf("crawl %s, which shares the directory %s: %w", k.Name, c.root, err)
	}
	for _, f := range files {
		p := filepath.Join(k.Location, filepath.FromSlash(f.Name))
		if c.packages[p] {
			return fmt.Errorf("%s is a file of the committed crawl %s: committed crawls are never rewritten", p, k.Name)
		}
	}
	return nil
}

// committedPackage finds a committed crawl's WACZ package by its name
// in the manifests (CRAWL/PATH.wacz, escaped or not): its path and its
// crawl. Originals of crawls imported from WACZ files are named so too.
func (c *crawlMode) committedPackage(name string) (path, crawl string, ok bool) {
	crawl = crawlindex.CrawlOf(name)
	if !c.committed[crawl] || crawl == c.name || !wacz.IsWACZ(name) {
		return "", "", false
	}
	loc, ok := c.index.Prefixes()[crawl]
	if !ok {
		return "", "", false
	}
	return filepath.Join(loc, filepath.FromSlash(strings.TrimPrefix(name, crawl+"/"))), crawl, true
}

// packageAfter writes the crawl's after manifest with each WACZ member's
// lines named by their package, at their offset in it (the members as
// the last listing found them: after the rewrite, in the packages as
// they now are), for the commit; the name of the manifest to commit.
// A crawl without packages commits its after manifest as it is.
func (r *run) packageAfter() (string, error) {
	after := r.wd.File(workdir.AfterFile)
	members := r.coll.wacz.members
	if len(members) == 0 {
		return after, nil
	}
	in, err := gzfile.Open(after)
	if err != nil {
		return "", err
	}
	defer in.Close()
	name := r.wd.File("after-packages.manifest")
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	mr := manifest.NewReader(bufio.NewReaderSize(in, 256<<10), after)
	for {
		l, err := mr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		file, err := manifest.UnescapeFile(l.File)
		if err != nil {
			return "", err
		}
		if m, ok := members[file]; ok {
			if l.Offset+l.Length > m.Size {
				return "", fmt.Errorf("%s: offset %d: a %d-byte record past the member's end (%d bytes)", file, l.Offset, l.Length, m.Size)
			}
			l.File = manifest.EscapeFile(m.Package)
			l.Offset += m.Offset
		}
		if err := w.Write(&l); err != nil {
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if err := out.CommitRenamed(); err != nil {
		return "", err
	}
	return name, nil
}

// packageFiles replaces the members among the crawl's files as committed
// by their packages, each once, with its size, SHA-256 (of the whole
// package: as the rewrite wrote it, else read here) and stamp as it now
// is.
func (r *run) packageFiles(files []crawlindex.FileInfo) ([]crawlindex.FileInfo, error) {
	var out []crawlindex.FileInfo
	done := map[string]bool{}
	for _, f := range files {
		m, ok := r.coll.wacz.members[r.crawl.name+"/"+f.Name]
		if !ok {
			out = append(out, f)
			continue
		}
		if done[m.Package] {
			continue
		}
		done[m.Package] = true
		stamp, _ := fileStamp(m.Path)
		fi, err := os.Stat(m.Path)
		if err != nil {
			return nil, err
		}
		sum, size := "", fi.Size()
		if s, ok := r.coll.wacz.sums[m.Path]; ok && stamp != "" && s.stamp == stamp {
			sum = s.sha256 // taken as the rewrite wrote it
		} else if sum, size, err = packageFixity(m.Path); err != nil {
			return nil, err
		}
		out = append(out, crawlindex.FileInfo{Name: strings.TrimPrefix(m.Package, r.crawl.name+"/"), Size: size, SHA256: sum, Stamp: stamp})
	}
	return out, nil
}

// committedStamps are what begin compares with the crawl's files as
// committed: each file's stamp, a WACZ member's that of its package,
// by the name the index gives it.
func (r *run) committedStamps() map[string]string {
	now := map[string]string{}
	for _, in := range r.inputs {
		name := in.Name
		if m, ok := r.coll.wacz.members[in.Name]; ok {
			name = m.Package
		}
		s, _ := fileStamp(in.Path)
		now[name] = s
	}
	return now
}

// externalPackages is stage.PackageRewrite.External for a crawl: the
// committed crawls' packages, none without an index.
func (r *run) externalPackages() func(name string) (stage.ExternalPackage, bool) {
	if r.crawl == nil {
		return nil
	}
	var mu sync.Mutex
	files := map[string]map[string]crawlindex.FileInfo{} // crawl -> its files as committed, by name
	return func(name string) (stage.ExternalPackage, bool) {
		path, crawl, ok := r.crawl.committedPackage(name)
		if !ok {
			return stage.ExternalPackage{}, false
		}
		e := stage.ExternalPackage{Path: path, CrawlID: crawl}
		mu.Lock()
		defer mu.Unlock()
		of, loaded := files[crawl]
		if !loaded {
			of = map[string]crawlindex.FileInfo{}
			if list, err := r.crawl.index.Files(crawl); err == nil { // else read whole when needed
				for _, f := range list {
					of[f.Name] = f
				}
			}
			files[crawl] = of
		}
		if f, ok := of[strings.TrimPrefix(name, crawl+"/")]; ok {
			e.SHA256, e.Size, e.Stamp = f.SHA256, f.Size, f.Stamp
		}
		return e, true
	}
}

// refuseWACZDependent refuses index remove --restore of crawl gone while
// the dependent crawl d's files include WACZ packages: re-pointing or
// restoring revisits inside packages (a rebuild of each package) is not
// done yet, and a package rewritten as a WARC file would be lost.
func refuseWACZDependent(ix *crawlindex.Index, d *crawlindex.Crawl, gone string) error {
	files, err := ix.Files(d.Name)
	if err != nil {
		return err
	}
	for _, f := range files {
		if wacz.IsWACZ(f.Name) {
			return fmt.Errorf("crawl %s, which needs crawl %s, is a crawl of WACZ packages (%s): index remove --restore does not rewrite packages; nothing was changed: take crawl %s out first (warcdedup index remove, then warcdedup undo of it), or keep crawl %s",
				d.Name, gone, f.Name, d.Name, gone)
		}
	}
	return nil
}
