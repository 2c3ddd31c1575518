package source

import (
	"context"
	"io"
	"os"

	"warcdedup/internal/openfiles"
	"warcdedup/manifest"
)

// Files opens records as Locator.Open does, but keeps the local files it
// opened open, the limit most recently used of them (openfiles.Cache): a
// stage that reads tens of thousands of records from a few files
// (warccollres comparing duplicates) then pays a pread per record, not an
// open and a close. Use it only where files are not replaced while it is
// open, or are dropped (Drop) before they are: a file renamed over would
// be read in its old version.
type Files struct {
	loc   *Locator
	files *openfiles.Cache // by field 1
}

// KeptOpen is how many files a stage's Files keeps open: well under the
// usual limit of 1,024 descriptors a process has, with room for the rest.
const KeptOpen = 256

// Files returns a Files that keeps up to limit files open.
func (l *Locator) Files(limit int) *Files {
	return &Files{loc: l, files: openfiles.New(limit)}
}

// Open returns the length bytes at offset of the file field names (field
// 1 of a manifest); see Locator.Open.
func (fs *Files) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	of := fs.files.Take(field)
	if of == nil {
		where, err := fs.loc.Where(field)
		if err != nil || isURL(where) {
			return fs.loc.Open(ctx, field, offset, length)
		}
		f, err := fs.openLocal(field, where)
		if err != nil {
			return nil, err
		}
		of = fs.files.Keep(field, where, f)
	}
	return &sharedRecord{localRecord{r: io.NewSectionReader(of, offset, length), want: length, name: of.Label, offset: offset}, of}, nil
}

// openLocal opens a local file as Locator.Open does: a locations entry as
// written, any other file confined to its root.
func (fs *Files) openLocal(field, where string) (*os.File, error) {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return nil, err
	}
	if _, listed := fs.loc.Locations[name]; listed {
		return os.Open(where)
	}
	local, err := fs.loc.Resolve(field)
	if err != nil {
		return nil, err
	}
	return local.Open()
}

// Drop closes the file of field 1 field if it is kept open (once its
// readers are done): the caller is about to replace it, and the records
// read after that are read from the new version.
func (fs *Files) Drop(field string) { fs.files.Drop(field) }

// Close closes the files kept open; those still read are closed by their
// last reader.
func (fs *Files) Close() error { return fs.files.Close() }

// sharedRecord is a record read from a file Files keeps open.
type sharedRecord struct {
	localRecord
	of *openfiles.File
}

func (s *sharedRecord) Close() error {
	if s.of != nil {
		s.of.Release()
		s.of = nil
	}
	return nil
}
