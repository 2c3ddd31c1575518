package reindex

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/internal/fspath"
)

// An index of several files (a ZipNum's summary and block files) cannot be
// replaced by one rename, and a summary that does not match its blocks
// breaks every lookup. So the new versions are written beside the files
// under temporary names and synced, then a journal naming each temporary
// file and the file it replaces is written and synced beside the index
// (".NAME.pending"), then the files are renamed, the block files first and
// the summary last, and the journal is removed. A crash before the journal
// leaves the old files (and temporary files a rerun removes); a crash after
// it, the journal, which FinishPending (every update of the index calls it
// first) completes: no rerun ever reads or keeps a summary of one version
// with blocks of the other. A reader that opens the files between the
// renames, a few milliseconds, sees them mismatched, as it would with any
// two-file index replaced in place.

// FileSum is a file as written: its size and SHA-256 (bare hex, fixity's
// form of it).
type FileSum struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// replacement is the new versions of an index's files.
type replacement struct {
	index string // the index's path (a ZipNum's summary): renamed last
	note  string // kept in the journal
	files []*newFile
	// before, when set, is called with what will replace the files
	// before anything does; an error leaves them untouched.
	before func([]FileSum) error
}

// newFile is the new version of one file, written under a temporary name.
type newFile struct {
	final, tmp string
	f          *os.File
	h          *fixity.Hash
	closed     bool
}

func (nf *newFile) Write(p []byte) (int, error) {
	n, err := nf.f.Write(p)
	nf.h.Write(p[:n])
	return n, err
}

// close syncs and closes the file.
func (nf *newFile) close() error {
	if nf.closed {
		return nil
	}
	nf.closed = true
	err := nf.f.Sync()
	if cerr := nf.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", nf.final, err)
	}
	return nil
}

func (nf *newFile) sum() FileSum {
	return FileSum{Path: nf.final, Size: nf.h.Size(), SHA256: nf.h.Sum(fixity.SHA256)}
}

// create starts the new version of final, beside it, with its mode.
func (r *replacement) create(final string) (*newFile, error) {
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(final); err == nil {
		perm = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(final), atomicfile.TempPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	nf := &newFile{final: final, tmp: f.Name(), f: f, h: fixity.New(fixity.SHA256)}
	r.files = append(r.files, nf)
	return nf, nil
}

// abort removes the temporary files.
func (r *replacement) abort() {
	for _, nf := range r.files {
		if !nf.closed {
			nf.f.Close()
			nf.closed = true
		}
		os.Remove(nf.tmp)
	}
	r.files = nil
}

// journal is what the journal file holds.
type journal struct {
	Index string        `json:"index"`
	Note  string        `json:"note,omitempty"`
	Files []journalFile `json:"files"`
}

type journalFile struct {
	Temp  string `json:"temp"`
	Final string `json:"final"`
}

// journalPath is the journal of the index at path.
func journalPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".pending")
}

// commit replaces the files with their new versions (see above) and
// returns what was written.
func (r *replacement) commit() ([]FileSum, error) {
	j, sums, err := r.prepare()
	if err != nil || j == nil {
		return sums, err
	}
	// From here on the journal completes the replacement, now or in
	// FinishPending.
	if err := applyJournal(journalPath(r.index), j); err != nil {
		return nil, fmt.Errorf("%w (the next update of %s completes it)", err, r.index)
	}
	return sums, nil
}

// prepare syncs the new versions and writes the journal, or, for one
// file, renames it (and returns no journal).
func (r *replacement) prepare() (*journal, []FileSum, error) {
	for _, nf := range r.files {
		if err := nf.close(); err != nil {
			r.abort()
			return nil, nil, err
		}
	}
	// The summary last.
	files := slices.Clone(r.files)
	slices.SortStableFunc(files, func(a, b *newFile) int {
		switch {
		case a.final == r.index && b.final != r.index:
			return 1
		case b.final == r.index && a.final != r.index:
			return -1
		}
		return 0
	})
	var sums []FileSum
	for _, nf := range files {
		sums = append(sums, nf.sum())
	}
	if r.before != nil {
		if err := r.before(sums); err != nil {
			r.abort()
			return nil, nil, err
		}
	}
	if len(files) == 1 {
		nf := files[0]
		if err := os.Rename(nf.tmp, nf.final); err != nil {
			r.abort()
			return nil, nil, err
		}
		r.files = nil
		return nil, sums, syncDirs([]string{nf.final})
	}
	j := &journal{Index: r.index, Note: r.note}
	for _, nf := range files {
		j.Files = append(j.Files, journalFile{Temp: absPath(nf.tmp), Final: absPath(nf.final)})
	}
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		r.abort()
		return nil, nil, err
	}
	jf, err := atomicfile.Create(journalPath(r.index), 0o644)
	if err != nil {
		r.abort()
		return nil, nil, err
	}
	if _, err := jf.Write(append(data, '\n')); err != nil {
		jf.Abort()
		r.abort()
		return nil, nil, err
	}
	if err := jf.Commit(); err != nil {
		jf.Abort()
		r.abort()
		return nil, nil, err
	}
	r.files = nil
	return j, sums, nil
}

func absPath(p string) string {
	if a, err := fspath.Abs(p); err == nil {
		return a
	}
	return p
}

// applyJournal renames what the journal says is not renamed yet, syncs the
// directories, and removes the journal.
func applyJournal(path string, j *journal) error {
	var finals []string
	for _, f := range j.Files {
		finals = append(finals, f.Final)
		if _, err := os.Lstat(f.Temp); errors.Is(err, os.ErrNotExist) {
			continue // renamed before
		} else if err != nil {
			return err
		}
		if err := os.Rename(f.Temp, f.Final); err != nil {
			return err
		}
	}
	if err := syncDirs(finals); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

func syncDirs(files []string) error {
	done := map[string]bool{}
	for _, f := range files {
		d := filepath.Dir(f)
		if done[d] {
			continue
		}
		done[d] = true
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// FinishPending completes a replacement of the index's files that a crash
// interrupted after its journal was written (see above), and removes the
// temporary files an interrupted update left. It reports whether there was
// a journal, and the note its update kept in it.
func FinishPending(ix *Index) (note string, finished bool, err error) {
	path := journalPath(ix.Path)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", false, err
	default:
		var j journal
		if err := json.Unmarshal(data, &j); err != nil || len(j.Files) == 0 {
			return "", false, fmt.Errorf("%s: the journal of an interrupted update of %s cannot be read (%v): look at it and the files it names", path, ix.Path, err)
		}
		if err := applyJournal(path, &j); err != nil {
			return "", false, fmt.Errorf("completing the interrupted update of %s from %s: %w", ix.Path, path, err)
		}
		note, finished = j.Note, true
	}
	for _, f := range append(ix.Files(), path) {
		atomicfile.RemoveLeftovers(f)
	}
	return note, finished, nil
}
