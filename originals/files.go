package originals

import (
	"context"
	"io"
	"sync"

	"warcdedup/manifest"
	"warcdedup/source"
)

// maxOpenFiles is how many files of originals stay open between reads.
const maxOpenFiles = 32

// KeptFiles are the files an Opener keeps open between reads while a
// rewrite runs (KeepOpen): records are opened through them, a file is
// dropped (Drop) before its replacement, the rest closed at the end.
type KeptFiles interface {
	Opener
	Drop(field string)
	Close() error
}

// FileKeeper is an Opener that can keep the files it reads open between
// reads (a WACZ package's members: stage.PackageOpener).
type FileKeeper interface {
	KeepFiles(limit int) KeptFiles
}

// KeepFilesOf returns files src keeps open, up to limit: a
// source.Locator's (Files), a FileKeeper's; ok is false for any other
// Opener, which opens each record alone.
func KeepFilesOf(src Opener, limit int) (files KeptFiles, ok bool) {
	switch s := src.(type) {
	case *source.Locator:
		return s.Files(limit), true
	case FileKeeper:
		return s.KeepFiles(limit), true
	}
	return nil, false
}

// keptFiles keeps the local files originals are read from open while a
// rewrite runs (KeepOpen), when the Opener can (KeepFilesOf): opening
// a file through its root and closing it again for each original (a dozen
// system calls) was a third of the time Open took on the bench collection.
type keptFiles struct {
	mu      sync.Mutex
	keepers int
	files   KeptFiles // nil while none keeps them
}

// KeepOpen makes the Originals keep open the files they read originals
// from (at most maxOpenFiles, the least recently used closed), until done
// is called as often as KeepOpen was; the caller replaces files only
// under Lock, which drops the file replaced. Then each original opens
// its file again, as without KeepOpen. With an Opener that cannot keep
// files (KeepFilesOf) it does nothing.
func (o *Originals) KeepOpen() (done func()) {
	k := &o.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.files == nil {
		files, ok := KeepFilesOf(o.src, maxOpenFiles)
		if !ok {
			return func() {}
		}
		k.files = files
	}
	k.keepers++
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			if k.keepers--; k.keepers == 0 {
				k.files.Close() // a file still read is closed by its reader
				k.files = nil
			}
		})
	}
}

// open opens the record of an original through the files kept open, by
// its file's key (fileKey: the file kept open is the one Lock drops,
// however field 1 spells it), or through src, as field 1 spells it.
func (k *keptFiles) open(ctx context.Context, src Opener, field, key string, at, length int64) (io.ReadCloser, error) {
	k.mu.Lock()
	files := k.files
	k.mu.Unlock()
	if files != nil {
		return files.Open(ctx, key, at, length)
	}
	return src.Open(ctx, field, at, length)
}

// fileKey is the one spelling of the file field 1 names (manifest.
// EscapeFile of its name): the key of its replacement's lock and of its
// file kept open. Two manifests may spell one file two ways ("%2E" and
// "."); the log's moves go by the name, and so must these, or a read
// would not wait for a replacement named the other way, nor see the new
// version.
func fileKey(field string) string {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return field
	}
	return manifest.EscapeFile(name)
}

// drop closes a file kept open, if it is, once no read holds it.
func (k *keptFiles) drop(file string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.files != nil {
		k.files.Drop(file)
	}
}

// replaceLock is a file's lock for its replacement: it takes the file's
// lock for writing, so that no original is read from it meanwhile, and
// closes the file if it is kept open, so that the originals read after
// the replacement are read from the new version.
type replaceLock struct {
	mu   *sync.RWMutex
	kept *keptFiles
	file string
}

func (l *replaceLock) Lock() {
	l.mu.Lock()
	l.kept.drop(l.file)
}

func (l *replaceLock) Unlock() { l.mu.Unlock() }
