package reindex

import (
	"path"
	"strings"
)

// FileSet is the files of a collection, by their names relative to its
// root, to tell whether an index line's file is one of them, matched as
// Moves.Resolve matches the log's: the same name, a "/"-suffix of the
// line's (an absolute path, a URL), or the base name (what indexers write).
type FileSet struct {
	names map[string]bool
	bases map[string]bool
}

// NewFileSet returns the set of the files named (slash-separated,
// relative to the collection root).
func NewFileSet(names []string) *FileSet {
	s := &FileSet{names: map[string]bool{}, bases: map[string]bool{}}
	for _, n := range names {
		s.names[n] = true
		s.bases[path.Base(n)] = true
	}
	return s
}

// Knows reports whether an index line's file name is a file of the set.
func (s *FileSet) Knows(file []byte) bool {
	n := string(file)
	if s.names[n] {
		return true
	}
	for i := strings.IndexByte(n, '/'); i >= 0; {
		if s.names[n[i+1:]] {
			return true
		}
		j := strings.IndexByte(n[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return s.bases[path.Base(n)]
}
