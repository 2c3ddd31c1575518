// Package openfiles keeps files open between reads, the most recently
// used of them up to a limit: a stage that reads tens of thousands of
// records from a few files then pays a pread per record, not an open and
// a close (a dozen system calls). Readers of one file share its
// descriptor (ReadAt is safe for that); a file evicted, dropped or left
// by Close while it is read is closed by its last reader.
package openfiles

import (
	"container/list"
	"os"
	"sync"
)

// Cache keeps files open by key. Use it only where files are not replaced
// while it is open, or are dropped (Drop) before they are: a file renamed
// over would be read in its old version.
type Cache struct {
	limit int

	mu     sync.Mutex
	open   map[string]*list.Element // key -> its *File in lru
	lru    list.List                // most recently used first
	closed bool                     // after Close, files are not kept
}

// File is a file the Cache keeps open, taken by a reader until Release.
type File struct {
	*os.File
	// Label says where the file is, for messages.
	Label string

	c       *Cache
	key     string
	readers int
	evicted bool // out of the map: closed when the last reader is done
}

// New returns a Cache that keeps up to limit files open.
func New(limit int) *Cache {
	return &Cache{limit: max(limit, 1), open: map[string]*list.Element{}}
}

// Take returns the file kept under key with one more reader, nil if none
// is.
func (c *Cache) Take(key string) *File {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.open[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	f := e.Value.(*File)
	f.readers++
	return f
}

// Keep keeps f, just opened, under key, with its first reader, and
// evicts the least recently used files beyond the limit. If another
// reader kept a file under key meanwhile, that one is returned, with one
// more reader, and f is closed. After Close, f is not kept: its reader
// closes it.
func (c *Cache) Keep(key, label string, f *os.File) *File {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.open[key]; ok {
		f.Close()
		kept := e.Value.(*File)
		kept.readers++
		return kept
	}
	kf := &File{File: f, Label: label, c: c, key: key, readers: 1}
	if c.closed {
		kf.evicted = true
		return kf
	}
	c.open[key] = c.lru.PushFront(kf)
	for c.lru.Len() > c.limit {
		c.evict(c.lru.Back())
	}
	return kf
}

// Release is the end of one reader's use of f.
func (f *File) Release() {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.readers--; f.readers == 0 && f.evicted {
		f.File.Close()
	}
}

// Drop closes the file kept under key, if one is, once its readers are
// done: the caller is about to replace it, and the reads after that are
// of the new version.
func (c *Cache) Drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.open[key]; ok {
		c.evict(e)
	}
}

// Len is how many files are kept open.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Close closes the files kept open, those still read by their last
// reader; files kept after it are closed by their reader.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.lru.Len() > 0 {
		c.evict(c.lru.Back())
	}
	return nil
}

func (c *Cache) evict(e *list.Element) {
	f := c.lru.Remove(e).(*File)
	delete(c.open, f.key)
	f.evicted = true
	if f.readers == 0 {
		f.File.Close()
	}
}
