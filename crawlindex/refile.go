package crawlindex

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/wacz"
)

// A committed crawl's WACZ package may require (relation.requires, by
// SHA-256 and size) a package that a later job rewrites: a run of a
// crawl that package requires (after its undo, or one Browsertrix
// deduplicated against at crawl time), or the undo of one. The job then
// writes that requirer anew with its entries brought up to date, its
// WARC members where they were (every member copied byte for byte,
// datapackage.json and its digest file alone changed), and the index
// records it again (Change.Refile). A RefileNote, written to the job's
// work directory before any requirer is written anew, makes that
// resumable: it names each such package with where its WARC members
// were, and Refiles, run again after a stop, finds each one written
// anew since (its stamp or size not the index's) and records it, once
// its members are where the note says.

// RefileEntry is a committed crawl's package noted before its requires
// entries are brought up to date: its WARC members' places.
type RefileEntry struct {
	Crawl   string       `json:"crawl"`
	Name    string       `json:"name"` // relative to the crawl's location
	Path    string       `json:"path"`
	Members []wacz.Place `json:"members"`
}

// WriteRefileNote writes the note to the file name, whole or not at all.
func WriteRefileNote(name string, notes []RefileEntry) error {
	data, err := json.MarshalIndent(notes, "", "  ")
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(append(data, '\n')); err != nil {
		return err
	}
	return f.Commit()
}

// ReadRefileNote reads the note in the file name (an error wrapping
// os.ErrNotExist if there is none).
func ReadRefileNote(name string) ([]RefileEntry, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var notes []RefileEntry
	if err := json.Unmarshal(data, &notes); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return notes, nil
}

// NotedPaths are the paths of the packages the note in the file name
// names (none if there is no note): what a job resuming the work it
// notes locks before it touches any (package collock).
func NotedPaths(name string) ([]string, error) {
	notes, err := ReadRefileNote(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(notes))
	for i, n := range notes {
		paths[i] = n.Path
	}
	return paths, nil
}

// NotePackage notes the package at path, the file name of committed
// crawl crawl: where its WARC members are now (wacz.Package.ArchivePlaces,
// whose error says why it may not be written anew).
func NotePackage(crawl, name, path string) (RefileEntry, error) {
	p, err := wacz.Open(path)
	if err != nil {
		return RefileEntry{}, err
	}
	defer p.Close()
	places, err := p.ArchivePlaces()
	if err != nil {
		return RefileEntry{}, err
	}
	return RefileEntry{Crawl: crawl, Name: name, Path: path, Members: places}, nil
}

// Unmoved checks that the package n notes has its WARC members where
// the note has them (offset, size and CRC-32 of each), whether it was
// written anew since or not: the records the index has at offsets in it
// are still there. A run resuming a stopped attempt takes a noted
// package written anew since its crawl's commit only so, and the commit
// records it again only so (Refiles).
func (n RefileEntry) Unmoved() error {
	p, err := wacz.Open(n.Path)
	if err != nil {
		return err
	}
	places, err := p.ArchivePlaces()
	p.Close()
	if err != nil {
		return err
	}
	if !slices.Equal(places, n.Members) {
		return errors.New("its members are not where they were before its requires entries were written anew")
	}
	return nil
}

// Refiles are the noted packages of the index's crawls that were written
// anew since the index recorded them (their stamp or size is not the
// index's), as they are now (size, SHA-256, stamp), by crawl: a
// Change's Refile. A package written anew whose WARC members are not
// where the note has them is not refiled: problems say so (its records
// moved, so the index's originals of it would be wrong). A noted
// package its crawl no longer lists, or of a crawl removed, is passed
// over; so is one gone (deleted while its crawl lists it), named in gone
// with what to do: there is nothing of it to record again, nothing the
// job wrote rests on it being recorded, and its crawl's files missing
// is for the index to learn through its own verify and remove, not a
// reason for every commit of the job to fail.
func Refiles(ix *Index, notes []RefileEntry) (refile map[string][]FileInfo, problems, gone []string, err error) {
	listed := map[string]map[string]FileInfo{}
	for _, n := range notes {
		of, ok := listed[n.Crawl]
		if !ok {
			of = map[string]FileInfo{}
			if ix.Registry.Crawl(n.Crawl) != nil {
				files, err := ix.Files(n.Crawl)
				if err != nil {
					return nil, nil, nil, fmt.Errorf("crawl %s's list of files: %w", n.Crawl, err)
				}
				for _, f := range files {
					of[f.Name] = f
				}
			}
			listed[n.Crawl] = of
		}
		recorded, ok := of[n.Name]
		if !ok {
			continue // no longer the crawl's
		}
		fi, err := os.Stat(n.Path)
		if errors.Is(err, os.ErrNotExist) {
			gone = append(gone, fmt.Sprintf("%s (crawl %s) is gone, though the index %s lists it among the crawl's files: passed over (its requires entries were to be brought up to date). Put it back, or, if it is gone for good, let the index know: `warcdedup index verify --index %s` names the crawl's files missing, `warcdedup index remove --index %s %s` takes the crawl out (with --restore, first giving back the revisits that need it)",
				n.Path, n.Crawl, ix.Dir, ix.Dir, ix.Dir, n.Crawl))
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s (crawl %s), noted to be recorded again in the index: %w", n.Path, n.Crawl, err)
		}
		stamp := Stamp(fi)
		if stamp == recorded.Stamp && fi.Size() == recorded.Size {
			continue // not written anew
		}
		if err := n.Unmoved(); err != nil {
			problems = append(problems, fmt.Sprintf("%s (crawl %s): changed, not recorded again in the index %s: %v", n.Path, n.Crawl, ix.Dir, err))
			continue
		}
		h, err := fixity.HashFile(n.Path, fixity.SHA256)
		if err != nil {
			return nil, nil, nil, err
		}
		if refile == nil {
			refile = map[string][]FileInfo{}
		}
		f := FileInfo{Name: n.Name, Size: h.Size(), SHA256: h.Sum(fixity.SHA256), Stamp: stamp}
		f.Requires, f.RequiresKnown = packageRequires(n.Path, stamp)
		refile[n.Crawl] = append(refile[n.Crawl], f)
	}
	return refile, problems, gone, nil
}

// packageRequires is FileInfo.Requires of the package at path, known
// if read from the version of stamp.
func packageRequires(path, stamp string) (string, bool) {
	p, err := wacz.Open(path)
	if err != nil {
		return "", false
	}
	names, err := p.Datapackage.RequiredByHash()
	p.Close()
	if fi, serr := os.Stat(path); err != nil || serr != nil || Stamp(fi) != stamp {
		return "", false
	}
	return RequiresOf(names)
}

// UpdateSources brings up to date the hash and size of the files refile
// names (packages written anew, by crawl, as they are now: a Change's
// Refile) in the multi-WACZ JSON of their crawl (Crawl.Source): each
// JSON is written anew beside itself and renamed over it, its other
// bytes kept, then read again and checked. Done before the change is
// committed, it finds them up to date when run again after a stop. The
// notes name what it could not bring up to date: the packages of a
// crawl whose JSON the index does not record (imported, or run on a
// directory or packages named) or is not there any more, and those a
// crawl's JSON does not list.
func (ix *Index) UpdateSources(refile map[string][]FileInfo) (notes []string, err error) {
	for _, crawl := range slices.Sorted(maps.Keys(refile)) {
		k := ix.Registry.Crawl(crawl)
		if k == nil {
			continue
		}
		paths := map[string]FileInfo{}
		for _, f := range refile[crawl] {
			paths[filepath.Join(k.Location, filepath.FromSlash(f.Name))] = f
		}
		if k.Source == "" {
			notes = append(notes, fmt.Sprintf("crawl %s's packages %s were written anew (their requires entries brought up to date); the index %s records no multi-WACZ JSON of the crawl: one that lists them names their former hash and size",
				crawl, strings.Join(slices.Sorted(maps.Keys(paths)), ", "), ix.Dir))
			continue
		}
		if _, err := os.Stat(k.Source); errors.Is(err, os.ErrNotExist) {
			// Moved or deleted since the crawl's commit: nothing there
			// names the former hashes, and the index must still record
			// the packages as they are (the job would stop here on every
			// run again, the index describing their former versions).
			notes = append(notes, fmt.Sprintf("crawl %s's packages %s were written anew (their requires entries brought up to date); the crawl's multi-WACZ JSON %s, which the index %s records, is not there: a copy of it elsewhere names their former hash and size",
				crawl, strings.Join(slices.Sorted(maps.Keys(paths)), ", "), k.Source, ix.Dir))
			continue
		}
		listed, err := updateSource(k.Source, paths)
		if err != nil {
			return notes, fmt.Errorf("crawl %s's multi-WACZ JSON: %w", crawl, err)
		}
		if listed < len(paths) {
			notes = append(notes, fmt.Sprintf("crawl %s's multi-WACZ JSON %s lists %d of its %d packages written anew (their requires entries brought up to date): the others are not brought up to date there", crawl, k.Source, listed, len(paths)))
		}
	}
	return notes, nil
}

// updateSource writes the multi-WACZ JSON at name anew with the SHA-256
// and size of each package of paths it lists (by local path), and checks
// it as written; it returns how many it lists.
func updateSource(name string, paths map[string]FileInfo) (int, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	entries, err := wacz.ReadCollection(bytes.NewReader(b), name)
	if err != nil {
		return 0, err
	}
	updates := map[string]wacz.CollectionUpdate{}
	for _, e := range entries {
		p, ok := e.LocalPath(name)
		if !ok {
			continue
		}
		if f, ok := paths[p]; ok {
			sum, err := hex.DecodeString(f.SHA256)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", p, err)
			}
			updates[e.Path] = wacz.CollectionUpdate{SHA256: sum, Size: f.Size}
		}
	}
	nb, err := wacz.UpdateCollection(b, updates)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(nb, b) {
		if err := replaceFile(name, nb); err != nil {
			return 0, err
		}
	}
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if entries, err = wacz.ReadCollection(f, name); err != nil {
		return 0, err
	}
	for _, e := range entries {
		p, ok := e.LocalPath(name)
		if !ok {
			continue
		}
		if want, ok := paths[p]; ok {
			sum, err := e.SHA256()
			if err != nil || sum != want.SHA256 || e.Size != want.Size {
				return 0, fmt.Errorf("%s: resource %s as written names SHA-256 %s, %d bytes; the package has %s, %d bytes", name, e.Path, sum, e.Size, want.SHA256, want.Size)
			}
		}
	}
	return len(updates), nil
}

// replaceFile writes the file name anew beside itself, with its mode,
// synced, and renames it over it.
func replaceFile(name string, b []byte) error {
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(name); err == nil {
		perm = fi.Mode().Perm()
	}
	f, err := atomicfile.Create(name, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Commit()
}
