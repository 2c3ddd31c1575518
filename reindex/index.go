package reindex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/archname"
	"warcdedup/cdx"
	"warcdedup/gzmulti"
)

// Form is how an index is stored on disk.
type Form uint8

// The forms of index file.
const (
	Plain  Form = 1 + iota // lines
	Gzip                   // lines in one gzip member
	ZipNum                 // a summary (.idx) and the block files it names (cdx.ZipNum)
)

func (f Form) String() string {
	switch f {
	case Plain:
		return "plain"
	case Gzip:
		return "gzip"
	case ZipNum:
		return "ZipNum"
	}
	return "?"
}

// Index is an index as stored: one file, or a ZipNum's summary and block
// files.
type Index struct {
	Path  string // the file; a ZipNum's summary
	Form  Form
	Parts []Part // ZipNum: the block files, in the order the summary names them
	// Loc is the pywb .loc file that maps a tab-separated summary's part
	// names to block files ("" when there is none).
	Loc string
}

// Part is a block file of a ZipNum.
type Part struct {
	Name string // as the summary names it
	Path string
}

// Files are the files the index is made of: the summary first.
func (ix *Index) Files() []string {
	files := []string{ix.Path}
	for _, p := range ix.Parts {
		files = append(files, p.Path)
	}
	return files
}

// part returns the path of the block file the summary calls name.
func (ix *Index) part(name string) (string, bool) {
	for _, p := range ix.Parts {
		if p.Name == name {
			return p.Path, true
		}
	}
	return "", false
}

// isSummary tells a ZipNum summary by its name, as pywb does.
func isSummary(path string) bool {
	return strings.HasSuffix(path, ".idx") || strings.HasSuffix(path, ".summary")
}

// Locate finds out the form of the index at path: a summary (".idx",
// ".summary" whose first line is a summary's) is a ZipNum, and so is a
// gzip file that a summary beside it names as its block file; any other
// file is plain or gzip (a CDX index may be called ".idx" too).
func Locate(path string) (*Index, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if isSummary(path) {
		ok, err := startsAsSummary(path)
		if err != nil {
			return nil, err
		}
		if ok {
			return locateZipNum(path)
		}
	}
	gz, err := isGzip(path)
	if err != nil {
		return nil, err
	}
	if !gz {
		return &Index{Path: path, Form: Plain}, nil
	}
	// A ZipNum's block file: the summary beside it that names it.
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var found []*Index
	for _, e := range entries {
		if !e.Type().IsRegular() || !isSummary(e.Name()) {
			continue
		}
		if ok, _ := startsAsSummary(filepath.Join(dir, e.Name())); !ok {
			continue
		}
		ix, err := locateZipNum(filepath.Join(dir, e.Name()))
		if err != nil {
			// A summary that cannot be read names nothing; if it was
			// this file's, the file's gzip members refuse it.
			continue
		}
		for _, p := range ix.Parts {
			if pfi, err := os.Stat(p.Path); err == nil && os.SameFile(pfi, fi) {
				found = append(found, ix)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return &Index{Path: path, Form: Gzip}, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%s: the block file of several ZipNum summaries (%s and %s): give the summary to update", path, found[0].Path, found[1].Path)
}

// startsAsSummary reports whether the file's first line is a ZipNum
// summary's: "!meta", or a line ParseBlock takes.
func startsAsSummary(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadSlice('\n')
	if err != nil && err != io.EOF {
		return false, nil
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.HasPrefix(line, []byte("!meta ")) {
		return true, nil
	}
	_, err = cdx.ParseBlock(line, 1)
	return err == nil, nil
}

func isGzip(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return gzmulti.IsGzip(f)
}

// locateZipNum reads the summary for the names of its block files and
// finds them: a JSON summary's "filename" (on each line, or in "!meta")
// beside the summary, a tab-separated summary's part names through pywb's
// .loc file (the summary's name with ".loc"), else a file of that name
// (or with ".gz", ".cdx.gz") beside the summary.
func locateZipNum(summary string) (*Index, error) {
	f, err := os.Open(summary)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ix := &Index{Path: summary, Form: ZipNum}
	ir := cdx.NewIdxReader(f, summary)
	seen := map[string]bool{}
	var names []string
	for {
		b, err := ir.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		name := partName(ir, b, summary)
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, n := range names {
		if archname.IsArchive(n) {
			return nil, fmt.Errorf("%s: names %q as a block file: a WARC or ARC file is no ZipNum's block file (is it a CDXJ index called .idx?)", summary, n)
		}
	}
	dir := filepath.Dir(summary)
	switch ir.Form() {
	case cdx.IdxJSON:
		for _, n := range names {
			if strings.Contains(n, "://") || !filepath.IsLocal(filepath.FromSlash(n)) {
				return nil, fmt.Errorf("%s: the block file %q is not a file beside the summary: it cannot be rewritten with it", summary, n)
			}
			ix.Parts = append(ix.Parts, Part{Name: n, Path: filepath.Join(dir, filepath.FromSlash(n))})
		}
	case cdx.IdxTab:
		loc := strings.TrimSuffix(strings.TrimSuffix(summary, ".idx"), ".summary") + ".loc"
		paths, err := readLoc(loc)
		switch {
		case err == nil:
			ix.Loc = loc
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
		for _, n := range names {
			var path string
			if ix.Loc != "" {
				p, ok := paths[n]
				switch {
				case !ok:
					return nil, fmt.Errorf("%s: part %q of %s is not in it", loc, n, summary)
				case len(p) > 1:
					return nil, fmt.Errorf("%s: part %q has %d copies (%s): rewriting one would leave the others stale; give a .loc with one path per part", loc, n, len(p), strings.Join(p, ", "))
				case strings.Contains(p[0], "://"):
					return nil, fmt.Errorf("%s: part %q is at %s, not a local file: it cannot be rewritten", loc, n, p[0])
				}
				path = p[0]
				if !filepath.IsAbs(path) {
					path = filepath.Join(filepath.Dir(loc), path)
				}
			} else {
				var found []string
				for _, c := range []string{n, n + ".gz", n + ".cdx.gz"} {
					if !filepath.IsLocal(c) {
						continue
					}
					if fi, err := os.Stat(filepath.Join(dir, c)); err == nil && fi.Mode().IsRegular() {
						found = append(found, filepath.Join(dir, c))
					}
				}
				if len(found) != 1 {
					return nil, fmt.Errorf("%s: no %s (pywb's map of part names to block files) and %d files named %q, %q.gz or %q.cdx.gz beside it: which is part %q?", summary, filepath.Base(loc), len(found), n, n, n, n)
				}
				path = found[0]
			}
			ix.Parts = append(ix.Parts, Part{Name: n, Path: path})
		}
	}
	for _, p := range ix.Parts {
		fi, err := os.Stat(p.Path)
		if err == nil && !fi.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: its block file %q: %w", summary, p.Name, err)
		}
	}
	return ix, nil
}

// partName is the name of the block file of block b: a JSON summary's
// line's "filename", else its "!meta" one, else the summary's name with
// ".cdx.gz" (WACZ's index.idx and index.cdx.gz).
func partName(ir *cdx.IdxReader, b *cdx.Block, summary string) string {
	switch {
	case b.Part != "":
		return b.Part
	case ir.Meta != nil && ir.Meta.Filename != "":
		return ir.Meta.Filename
	}
	base := filepath.Base(summary)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".idx"), ".summary") + ".cdx.gz"
}

// readLoc reads pywb's .loc file: "PART\tPATH[\tPATH...]" lines.
func readLoc(loc string) (map[string][]string, error) {
	f, err := os.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	paths := map[string][]string{}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimRight(sc.Bytes(), " \t\r")
		if len(line) == 0 {
			continue
		}
		fields := strings.Split(string(line), "\t")
		if len(fields) < 2 || fields[0] == "" || fields[1] == "" {
			return nil, fmt.Errorf("%s: line %d: not \"PART\\tPATH\"", loc, n)
		}
		if _, dup := paths[fields[0]]; dup {
			return nil, fmt.Errorf("%s: line %d: part %q again", loc, n, fields[0])
		}
		paths[fields[0]] = fields[1:]
	}
	return paths, sc.Err()
}
