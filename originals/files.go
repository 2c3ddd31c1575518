package originals

import (
	"sync"

	"warcdedup/source"
)

// maxOpenFiles is how many files of originals stay open between reads.
const maxOpenFiles = 32

// keptFiles keeps the local files originals are read from open while a
// rewrite runs (KeepOpen), when the Opener is a source.Locator: opening
// a file through its root and closing it again for each original (a dozen
// system calls) was a third of the time Open took on the bench collection.
type keptFiles struct {
	mu      sync.Mutex
	keepers int
	files   *source.Files // nil while none keeps them
}

// KeepOpen makes the Originals keep open the files they read originals
// from (at most maxOpenFiles, the least recently used closed), until done
// is called as often as KeepOpen was; the caller replaces files only
// under Lock, which closes the file replaced. Then each original opens
// its file again, as without KeepOpen. With an Opener other than a
// source.Locator it does nothing.
func (o *Originals) KeepOpen() (done func()) {
	loc, ok := o.src.(*source.Locator)
	if !ok {
		return func() {}
	}
	k := &o.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keepers++; k.files == nil {
		k.files = loc.Files(maxOpenFiles)
	}
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

// opener is what originals are read through: the files kept open, or src.
func (k *keptFiles) opener(src Opener) Opener {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.files != nil {
		return k.files
	}
	return src
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
