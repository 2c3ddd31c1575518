package jobtest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/fixity"
	"warcdedup/internal/ziptest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/stage"
	"warcdedup/wacz"
)

// GeneratedWACZ writes a generated collection of four WACZ packages of
// two crawls (plain CDXJ and ZipNum indexes) with 40% duplicates, most of
// them across packages; with loose, the last package's WARC files are
// left as plain files beside the three others.
func GeneratedWACZ(t testing.TB, loose bool) (string, *gen.Result) {
	t.Helper()
	cfg := gen.Config{Files: 8, Records: 320, DupRate: 0.4, Seed: 11, MeanPayload: 4 << 10, NonCandidates: true,
		Chunked: 0.1, Sequential: true, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}}
	dir, res := Generated(t, cfg)
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 4, Crawls: 2, Index: "mixed", KeepWARCs: loose})
	if err != nil {
		t.Fatal(err)
	}
	last := coll.Packages[len(coll.Packages)-1]
	for _, p := range coll.Packages {
		if !loose {
			break
		}
		if p.Name == last.Name {
			if err := os.Remove(filepath.Join(dir, p.Name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, w := range p.WARCs {
			if err := os.Remove(filepath.Join(dir, w)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir, res
}

// packageFixity is a package's SHA-256 (hex) and size now, what a
// requires entry names it by.
func packageFixity(t testing.TB, path string) (string, int64) {
	t.Helper()
	h, err := fixity.HashFile(path, fixity.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return h.Sum(fixity.SHA256), h.Size()
}

// RequireBy writes the package requirer anew requiring the package
// required (paths, any directory) by its SHA-256 and size now, as an
// earlier job (or Browsertrix) writes the entry.
func RequireBy(t testing.TB, requirer, required string) {
	t.Helper()
	r := Requirement(t, required)
	Rewrite(t, requirer, func(b *wacz.Rebuild) { b.Require = []wacz.Requirement{r} })
}

// Requirement is the requires entry naming the package at path by its
// SHA-256 and size now.
func Requirement(t testing.TB, path string) wacz.Requirement {
	t.Helper()
	sum, size := packageFixity(t, path)
	raw, _ := hex.DecodeString(sum)
	return wacz.RequirementOf(path, raw, size, "")
}

// Rewrite writes the package at path anew (wacz.Rebuild, every member
// copied) with edit's changes, and renames it over the package.
func Rewrite(t testing.TB, path string, edit func(*wacz.Rebuild)) {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path + ".new")
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: p, TempDir: t.TempDir()}
	edit(b)
	_, err = b.Write(out)
	p.Close()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// StaleRequires lists the requires entries by SHA-256 or size of the
// packages of dirs that do not name what they require as it is now, as
// "REQUIRER -> REQUIRED" (file names), sorted: the entry gives the
// package it names another SHA-256 or size than it has, gives a SHA-256
// without the size (the run writes both), or names a file found neither
// among the packages of dirs nor beside the requirer. It is the stricter
// of the two helpers it replaces, for all their callers: the one of
// several directories skipped entries naming a file not among their
// packages, the one of a single directory failed on them.
func StaleRequires(t testing.TB, dirs ...string) []string {
	t.Helper()
	byBase := map[string]string{}
	var all []string
	for _, d := range dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.wacz"))
		for _, n := range names {
			byBase[filepath.Base(n)] = n
			all = append(all, n)
		}
	}
	var stale []string
	for _, n := range all {
		p, err := wacz.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if r.Hash == "" && r.Size < 0 {
				continue // by name only: never stale
			}
			entry := filepath.Base(n) + " -> " + r.Filename
			path, ok := byBase[r.Filename]
			if !ok {
				path = filepath.Join(filepath.Dir(n), filepath.FromSlash(r.Filename))
				if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
					stale = append(stale, entry+" (not found)")
					continue
				}
			}
			sum, size := packageFixity(t, path)
			if r.Hash != "" && (sum != r.Hash || r.Size < 0) || r.Size >= 0 && size != r.Size {
				stale = append(stale, entry)
			}
		}
	}
	slices.Sort(stale)
	return stale
}

// RequiredByHash finds a package of dir that another requires by its
// SHA-256: the requirer and the required (file names).
func RequiredByHash(t testing.TB, dir string) (string, string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, n := range names {
		p, err := wacz.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		reqs, _ := p.Datapackage.Requires()
		p.Close()
		for _, r := range reqs {
			if r.Hash != "" && r.Filename != filepath.Base(n) {
				return filepath.Base(n), r.Filename
			}
		}
	}
	t.Fatal("no package requires another by hash: the test proves nothing")
	return "", ""
}

// PackageLines are the lines of the manifest listing that name a WARC
// member of the package pkg (its name in the listing).
func PackageLines(listing []byte, pkg string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(listing), "\n"), "\n") {
		if p, _, ok := wacz.SplitName(l); ok && p == pkg {
			out = append(out, l)
		}
	}
	return out
}

// StopRebuild stages beside pkg each member that differs from the
// package's original bytes, and puts the original back: what a stop
// between logging the members and renaming the new package leaves. It
// returns how many members it staged.
func StopRebuild(t testing.TB, pkg string, original []byte) int {
	t.Helper()
	p, err := wacz.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	old, err := wacz.NewPackage(bytes.NewReader(original), int64(len(original)), "old")
	if err != nil {
		t.Fatal(err)
	}
	staged := 0
	for _, m := range p.WARCs() {
		if om := old.Member(m.Name); om != nil && om.CRC32 == m.CRC32 {
			continue
		}
		sec, err := p.Section(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(sec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(pkg), stage.StagedName(pkg, m.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		staged++
	}
	if err := os.WriteFile(pkg, original, 0o644); err != nil {
		t.Fatal(err)
	}
	return staged
}

// WARCPlaces are where the WARC members of the package at path are, and
// their CRC-32: what the index's originals of it rest on.
func WARCPlaces(t testing.TB, path string) []string {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out []string
	for _, m := range p.WARCs() {
		out = append(out, fmt.Sprintf("%s %08x %d %d", m.Name, m.CRC32, m.DataOffset, m.Size))
	}
	return out
}

// IndexDisagrees lists the files of crawl that the index records with
// another size, SHA-256 or stamp than they have, and what its deep
// verification finds wrong.
func IndexDisagrees(t testing.TB, index, crawl string) []string {
	t.Helper()
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ix.Files(crawl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	k := ix.Registry.Crawl(crawl)
	for _, f := range files {
		path := filepath.Join(k.Location, filepath.FromSlash(f.Name))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sum, _ := packageFixity(t, path)
		if f.Size != fi.Size() || f.Stamp != crawlindex.Stamp(fi) || f.SHA256 != "" && f.SHA256 != sum {
			out = append(out, f.Name)
		}
	}
	if _, err := ix.Verify(true, func(s string) { out = append(out, s) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// WithDescriptors writes the package at path anew as a streaming ZIP
// writer does (Browsertrix, ArchiveWeb.page: a data descriptor after
// every member), its members' contents and order as they were.
func WithDescriptors(t testing.TB, path string) {
	t.Helper()
	ziptest.Rewrite{}.File(t, path)
}

// RequiresOf are the file names the package at path requires.
func RequiresOf(t testing.TB, path string) []string {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	reqs, err := p.Datapackage.Requires()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range reqs {
		out = append(out, r.Filename)
	}
	return out
}

// UpdateJSONEntry gives the package at path its hash and size now in
// the multi-WACZ JSON at name (by its file name), as an operator would.
func UpdateJSONEntry(t testing.TB, name, path string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	sum, size := packageFixity(t, path)
	raw, _ := hex.DecodeString(sum)
	nb, err := wacz.UpdateCollection(b, map[string]wacz.CollectionUpdate{filepath.Base(path): {SHA256: raw, Size: size}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, nb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// StaleInJSON lists the resources of the multi-WACZ JSON at name whose
// hash or size is not their package's now.
func StaleInJSON(t testing.TB, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := wacz.ReadCollection(f, name)
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, e := range entries {
		p, _ := e.LocalPath(name)
		sum, size := packageFixity(t, p)
		if h, _ := e.SHA256(); h != sum || e.Size != size {
			stale = append(stale, e.Path)
		}
	}
	return stale
}
