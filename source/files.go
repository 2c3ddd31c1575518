package source

import (
	"container/list"
	"context"
	"io"
	"os"
	"sync"

	"warcdedup/manifest"
)

// Files opens records as Locator.Open does, but keeps the local files it
// opened open, the limit most recently used of them: a stage that reads
// tens of thousands of records from a few files (warccollres comparing
// duplicates) then pays a pread per record, not an open and a close.
// Readers of one file share its descriptor (ReadAt is safe for that); a
// file evicted while read is closed by its last reader. Use it only where
// files are not replaced while it is open, or are dropped (Drop) before
// they are: a file renamed over would be read in its old version.
type Files struct {
	loc   *Locator
	limit int

	mu     sync.Mutex
	open   map[string]*list.Element // field 1 -> its *openFile in lru
	lru    list.List                // most recently used first
	closed bool                     // after Close, records are opened alone
}

// openFile is a file Files keeps open, and its readers.
type openFile struct {
	field   string
	f       *os.File
	where   string // its path, for messages
	readers int
	evicted bool // out of the map: closed when the last reader is done
}

// KeptOpen is how many files a stage's Files keeps open: well under the
// usual limit of 1,024 descriptors a process has, with room for the rest.
const KeptOpen = 256

// Files returns a Files that keeps up to limit files open.
func (l *Locator) Files(limit int) *Files {
	return &Files{loc: l, limit: max(limit, 1), open: map[string]*list.Element{}}
}

// Open returns the length bytes at offset of the file field names (field
// 1 of a manifest); see Locator.Open.
func (fs *Files) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	of := fs.take(field)
	if of == nil {
		where, err := fs.loc.Where(field)
		if err != nil || isURL(where) {
			return fs.loc.Open(ctx, field, offset, length)
		}
		f, err := fs.openLocal(field, where)
		if err != nil {
			return nil, err
		}
		of = fs.keep(&openFile{field: field, f: f, where: where})
	}
	return &sharedRecord{localRecord{r: io.NewSectionReader(of.f, offset, length), want: length, name: of.where, offset: offset}, fs, of}, nil
}

// take returns the open file of field, if kept, with one more reader.
func (fs *Files) take(field string) *openFile {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	e, ok := fs.open[field]
	if !ok {
		return nil
	}
	fs.lru.MoveToFront(e)
	of := e.Value.(*openFile)
	of.readers++
	return of
}

// keep adds a file just opened, with its first reader, evicting the least
// recently used beyond the limit; if another reader opened the same file
// meanwhile, that one is used and this one closed.
func (fs *Files) keep(of *openFile) *openFile {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if e, ok := fs.open[of.field]; ok {
		of.f.Close()
		of = e.Value.(*openFile)
		of.readers++
		return of
	}
	of.readers = 1
	if fs.closed {
		of.evicted = true // closed by its reader
		return of
	}
	fs.open[of.field] = fs.lru.PushFront(of)
	for fs.lru.Len() > fs.limit {
		fs.evict(fs.lru.Back())
	}
	return of
}

func (fs *Files) evict(e *list.Element) {
	of := fs.lru.Remove(e).(*openFile)
	delete(fs.open, of.field)
	of.evicted = true
	if of.readers == 0 {
		of.f.Close()
	}
}

// done is a reader of of finished.
func (fs *Files) done(of *openFile) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if of.readers--; of.readers == 0 && of.evicted {
		of.f.Close()
	}
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
func (fs *Files) Drop(field string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if e, ok := fs.open[field]; ok {
		fs.evict(e)
	}
}

// Close closes the files kept open; those still read are closed by their
// last reader.
func (fs *Files) Close() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.closed = true
	for fs.lru.Len() > 0 {
		fs.evict(fs.lru.Back())
	}
	return nil
}

// sharedRecord is a record read from a file Files keeps open.
type sharedRecord struct {
	localRecord
	fs *Files
	of *openFile
}

func (s *sharedRecord) Close() error {
	if s.of != nil {
		s.fs.done(s.of)
		s.of = nil
	}
	return nil
}
