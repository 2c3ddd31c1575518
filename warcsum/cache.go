package warcsum

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"warcdedup/atomicfile"
)

// Cache keeps, in a directory, each file's manifest lines and facts as a
// run read them, with the file's stamp: size, modification and change
// times, inode and device. A later run (a resumed one, the verification
// after a rewrite, a rerun with nothing to do) does not read a file again
// whose stamp is unchanged. The change time cannot be set back by any tool
// short of the kernel's own, so a file changed in place, even to the same
// size and modification time, is read again; so is every file a rewrite
// replaced (a new inode).
type Cache struct {
	dir string
	key string // the options the lines depend on
}

// NewCache returns the Cache in dir (created if need be) for runs with the
// options o: entries made with other options (another digest algorithm,
// other records listed) are not used.
func NewCache(dir string, o Options) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s skipEmpty=%v allStatuses=%v trustHeader=%v responsesOnly=%v",
		o.algorithm(), o.SkipEmpty, o.AllStatuses, o.TrustHeader, o.ResponsesOnly)
	return &Cache{dir: dir, key: key}, nil
}

// stamp identifies a version of a file, and holds what reading it gave.
type stamp struct {
	Name     string   `json:"name"`
	Options  string   `json:"options"`
	Size     int64    `json:"size"`
	Mtime    int64    `json:"mtime_ns"`
	Ctime    int64    `json:"ctime_ns"`
	Inode    uint64   `json:"inode"`
	Device   uint64   `json:"device"`
	Stats    Stats    `json:"stats"`
	Messages []string `json:"messages,omitempty"` // damage reported, in order
	Failed   string   `json:"failed,omitempty"`   // the error that ended the file
	// LinesSum and FactsSum are the SHA-256 of the two files: an entry
	// whose files were damaged (a crash before they reached the disk) is
	// not used.
	LinesSum string `json:"lines_sha256"`
	FactsSum string `json:"facts_sha256"`
	// SHA256 is the file's own, when the run that read it was asked for
	// it (Runner.OnFile).
	SHA256 string `json:"sha256,omitempty"`
}

// stampOf reads a file's stamp; ok is false where the file system gives
// no inode and change time (the cache is then not used).
func stampOf(path string) (stamp, bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}, false, nil
	}
	return stamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: st.Ctim.Nano(),
		Inode: uint64(st.Ino), Device: uint64(st.Dev)}, true, nil
}

func (a *stamp) sameFile(b *stamp) bool {
	return a.Size == b.Size && a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Inode == b.Inode && a.Device == b.Device
}

// paths are the files of one input's entry.
func (c *Cache) paths(name string) (lines, facts, stampFile string) {
	sum := sha256.Sum256([]byte(name))
	base := filepath.Join(c.dir, hex.EncodeToString(sum[:16]))
	return base + ".lines", base + ".facts", base + ".stamp"
}

// cached is one input's entry, found unchanged.
type cached struct {
	stamp stamp
	lines string
	facts string
}

// lookup returns the entry of in if the file is unchanged since it was
// made.
func (c *Cache) lookup(in Input) (*cached, bool) {
	lines, facts, stampFile := c.paths(in.Name)
	data, err := os.ReadFile(stampFile)
	if err != nil {
		return nil, false
	}
	var old stamp
	if json.Unmarshal(data, &old) != nil || old.Name != in.Name || old.Options != c.key {
		return nil, false
	}
	now, ok, err := stampOf(in.Path)
	if err != nil || !ok || !now.sameFile(&old) {
		return nil, false
	}
	return &cached{stamp: old, lines: lines, facts: facts}, true
}

// errDamagedEntry is a cache entry whose files do not have its sum.
var errDamagedEntry = errors.New("damaged cache entry")

// check reads the entry's files through its sum, before any of it is used.
func (e *cached) check() error {
	for _, f := range []struct{ name, sum string }{{e.lines, e.stamp.LinesSum}, {e.facts, e.stamp.FactsSum}} {
		h := sha256.New()
		if err := copyFile(h, f.name); err != nil {
			return err
		}
		if hex.EncodeToString(h.Sum(nil)) != f.sum {
			return errDamagedEntry
		}
	}
	return nil
}

// replay writes a checked entry's lines and facts.
func (e *cached) replay(lines, facts io.Writer) error {
	if err := copyFile(lines, e.lines); err != nil {
		return err
	}
	if facts != nil {
		return copyFile(facts, e.facts)
	}
	return nil
}

func copyFile(w io.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// entryWriter makes the entry of one input while the file is read; Commit
// makes it count only if the file did not change meanwhile.
type entryWriter struct {
	c      *Cache
	in     Input
	before stamp
	lines  *atomicfile.File
	facts  *atomicfile.File
	linesH hash.Hash
	factsH hash.Hash
	msgs   []string
}

// Lines and Facts are the writers of the entry's two files.
func (w *entryWriter) Lines() io.Writer { return io.MultiWriter(w.lines, w.linesH) }
func (w *entryWriter) Facts() io.Writer { return io.MultiWriter(w.facts, w.factsH) }

// create starts the entry of in, taking the file's stamp before it is
// read. It returns nil where the cache cannot be used for the file.
func (c *Cache) create(in Input) *entryWriter {
	before, ok, err := stampOf(in.Path)
	if err != nil || !ok {
		return nil
	}
	linesName, factsName, _ := c.paths(in.Name)
	lines, err := atomicfile.Create(linesName, 0o644)
	if err != nil {
		return nil
	}
	facts, err := atomicfile.Create(factsName, 0o644)
	if err != nil {
		lines.Abort()
		return nil
	}
	return &entryWriter{c: c, in: in, before: before, lines: lines, facts: facts, linesH: sha256.New(), factsH: sha256.New()}
}

// message notes damage reported, to report again when the entry is used.
func (w *entryWriter) message(err error) {
	if len(w.msgs) < 1000 {
		w.msgs = append(w.msgs, err.Error())
	}
}

// commit stores the entry, unless the file changed while it was read.
func (w *entryWriter) commit(st Stats, failed error, fileSum string) error {
	after, ok, err := stampOf(w.in.Path)
	if err != nil || !ok || !after.sameFile(&w.before) {
		w.abort()
		return nil
	}
	if err := w.lines.Commit(); err != nil {
		w.facts.Abort()
		return err
	}
	if err := w.facts.Commit(); err != nil {
		return err
	}
	s := w.before
	s.Name, s.Options, s.Stats, s.Messages = w.in.Name, w.c.key, st, w.msgs
	s.LinesSum, s.FactsSum = hex.EncodeToString(w.linesH.Sum(nil)), hex.EncodeToString(w.factsH.Sum(nil))
	s.SHA256 = fileSum
	if failed != nil {
		s.Failed = failed.Error()
	}
	data, err := json.Marshal(&s)
	if err != nil {
		return err
	}
	_, _, stampFile := w.c.paths(w.in.Name)
	f, err := atomicfile.Create(stampFile, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	if err := f.CommitRenamed(); err != nil {
		return err
	}
	return nil
}

func (w *entryWriter) abort() {
	w.lines.Abort()
	w.facts.Abort()
}
