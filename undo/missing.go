package undo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/crawlindex"
	"warcdedup/fixity"
	"warcdedup/internal/fspath"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
)

// undoScope is what the paths an undo was given cover, by the names the
// rewrite log gives files (relative to the collection, CRAWL/PATH for a
// crawl; unescaped): whole directories and single files.
type undoScope struct {
	dirs  []string // "" for a whole collection
	files map[string]bool
}

// scopeOf is the scope of the paths, each in one of the collections (as
// filesIn checked); crawl is the crawl's name for a crawl, or "".
func scopeOf(paths, collections []string, crawl string) undoScope {
	s := undoScope{files: map[string]bool{}}
	for _, p := range paths {
		abs, err := fspath.Abs(p)
		if err != nil {
			continue
		}
		var root string
		for _, c := range collections {
			if crawlindex.Within(abs, c) {
				root = c
			}
		}
		if root == "" {
			continue
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		if crawl != "" {
			rel = strings.TrimSuffix(crawl+"/"+rel, "/")
		}
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			s.dirs = append(s.dirs, rel)
		} else {
			s.files[rel] = true
		}
	}
	return s
}

// covers says whether the scope holds the file name (unescaped).
func (s undoScope) covers(name string) bool {
	if s.files[name] {
		return true
	}
	for _, d := range s.dirs {
		if d == "" || strings.HasPrefix(name, d+"/") {
			return true
		}
	}
	return false
}

// missingLogged names the files of the paths the undo was given in which
// the rewrite log has revisits left (logged, escaped) that are not in the
// collection any more (present, escaped, sorted): moved, renamed or
// deleted since the run. The undo cannot restore them where they are, and
// must not say the paths are undone. Where a file of the collection the
// log does not name has the size and SHA-256 of the log's last version of
// one (versions, by unescaped name, of the logged files not present), it
// is said to be there.
func (u *undo) missingLogged(versions map[string]rewritelog.Fixity, logged, present []string) []string {
	scope := scopeOf(u.opt.Paths, u.coll.Roots(), u.crawlName())
	here := map[string]bool{}
	for _, f := range present {
		here[f] = true
	}
	var missing []string
	for _, f := range logged {
		name, err := manifest.UnescapeFile(f)
		if err != nil || here[f] || !scope.covers(name) {
			continue
		}
		missing = append(missing, f)
	}
	if len(missing) == 0 {
		return nil
	}
	// Where they went: a file the log does not name, of the same size and
	// SHA-256 as the log's last version of the one missing.
	named := map[string]bool{}
	for _, f := range logged {
		named[f] = true
	}
	loc := u.coll.Locator()
	var out []string
	for _, f := range missing {
		name, _ := manifest.UnescapeFile(f)
		why := fmt.Sprintf("%s: not restored: the rewrite log has revisits left in it, and it is no longer in the collection (moved, renamed or deleted since the run)", name)
		if fx, ok := versions[name]; ok {
			for _, g := range present {
				if named[g] {
					continue
				}
				local, err := loc.Resolve(g)
				if err != nil {
					continue
				}
				if fi, err := os.Stat(local.Path()); err != nil || fi.Size() != fx.NewSize {
					continue
				}
				if h, err := fixity.HashFile(local.Path(), fixity.Like(fx.NewSum)...); err == nil && h.Is(fx.NewSize, fx.NewSum) {
					gname, _ := manifest.UnescapeFile(g)
					why += fmt.Sprintf("; %s has its size and sum: move it back to %s and undo again", gname, name)
					break
				}
			}
		}
		out = append(out, why)
		u.show.Print("warcdedup: error: %s", why)
	}
	return out
}

// crawlName is the crawl's name for a crawl undone, "" for a collection.
func (u *undo) crawlName() string {
	if u.crawl == nil {
		return ""
	}
	return u.crawl.name
}
