package undo

import (
	"os"
	"path/filepath"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/stage"
	"warcdedup/wacz"
)

// removeLeftovers removes from the collection the partial new versions of
// the files named (escaped, as manifest field 1) that a run or an undo
// killed while writing them left beside them (atomicfile names them
// ".tmp-NAME-DIGITS"; a WACZ member's are its package's and its staged
// copy's), as the next run would: nothing refers to them, and no run of
// the job is writing them, since this undo holds the work directory's
// lock. Each directory is listed once, however many files it holds. One
// that cannot be removed is named in the undo's exit reasons.
func (u *undo) removeLeftovers(files []string) {
	loc := u.coll.Locator()
	byDir := map[string]map[string]bool{}
	for _, f := range files {
		var member string
		if name, err := manifest.UnescapeFile(f); err == nil {
			if pkg, m, ok := wacz.SplitName(name); ok {
				f, member = manifest.EscapeFile(pkg), m
			}
		}
		local, err := loc.Resolve(f)
		if err != nil {
			continue
		}
		p := local.Path()
		dir := filepath.Dir(p)
		if byDir[dir] == nil {
			byDir[dir] = map[string]bool{}
		}
		byDir[dir][filepath.Base(p)] = true
		if member != "" {
			byDir[dir][stage.StagedName(p, member)] = true
		}
	}
	for dir, names := range byDir {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			base, ok := leftoverOf(e.Name())
			if !ok || !names[base] || !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil {
				u.leftovers = append(u.leftovers, err.Error())
				u.show.Print("warcdedup: error: %s, the partial new version of %s a killed run or undo left, cannot be removed: %v", p, base, err)
				continue
			}
			u.show.Note("warcdedup: removed %s, the partial new version of %s that a killed run or undo left", p, base)
		}
	}
}

// leftoverOf returns the name of the file whose temporary new version the
// name is (".tmp-NAME-DIGITS", as atomicfile.Create makes them).
func leftoverOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, atomicfile.TempPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 || i == len(rest)-1 {
		return "", false
	}
	for _, c := range rest[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rest[:i], true
}
