package warcsum

import (
	"bufio"
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
	"warcdedup/internal/ctime"
	"warcdedup/internal/gzfile"
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
	key string  // the options the lines depend on
	opt Options // what Derive reads new records with
}

// cacheVersion is that of what warcsum lists for a record: raised when a
// change makes it list or count any record otherwise, so that no entry
// made before (nor, through Derive, carried forward from one) is used.
const cacheVersion = 2

// NewCache returns the Cache in dir (created if need be) for runs with the
// options o: entries made with other options (another digest algorithm,
// other records listed) are not used.
func NewCache(dir string, o Options) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("v%d %s skipEmpty=%v allStatuses=%v trustHeader=%v responsesOnly=%v",
		cacheVersion, o.algorithm(), o.SkipEmpty, o.AllStatuses, o.TrustHeader, o.ResponsesOnly)
	return &Cache{dir: dir, key: key, opt: o}, nil
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
	// CountsSum is the SHA-256 of the third file, each record's counts
	// (see RecordCount); "" in entries made before there was one, which
	// Derive cannot use.
	CountsSum string `json:"counts_sha256,omitempty"`
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
	s, ok := stampFromInfo(fi)
	return s, ok, nil
}

// stampFromInfo is the stamp of the version fi describes.
func stampFromInfo(fi os.FileInfo) (stamp, bool) {
	if fi == nil {
		return stamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}, false
	}
	return stamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: ctime.Of(st),
		Inode: uint64(st.Ino), Device: uint64(st.Dev)}, true
}

func (a *stamp) sameFile(b *stamp) bool {
	return a.Size == b.Size && a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Inode == b.Inode && a.Device == b.Device
}

// entryFiles are the files of one input's entry.
type entryFiles struct {
	lines, facts, counts, stamp string
}

// paths are the files of one input's entry.
func (c *Cache) paths(name string) entryFiles {
	sum := sha256.Sum256([]byte(name))
	base := filepath.Join(c.dir, hex.EncodeToString(sum[:16]))
	return entryFiles{base + ".lines", base + ".facts", base + ".counts", base + ".stamp"}
}

// cached is one input's entry, found unchanged.
type cached struct {
	stamp stamp
	entryFiles
}

// lookup returns the entry of in if the file is unchanged since it was
// made.
func (c *Cache) lookup(in Input) (*cached, bool) {
	now, ok, err := stampOf(in.Path)
	if err != nil || !ok {
		return nil, false
	}
	return c.entry(in.Name, &now)
}

// entry returns the entry of the named file if it was made from the
// version with stamp now.
func (c *Cache) entry(name string, now *stamp) (*cached, bool) {
	files := c.paths(name)
	data, err := os.ReadFile(files.stamp)
	if err != nil {
		return nil, false
	}
	var old stamp
	if json.Unmarshal(data, &old) != nil || old.Name != name || old.Options != c.key || !now.sameFile(&old) {
		return nil, false
	}
	return &cached{stamp: old, entryFiles: files}, true
}

// errDamagedEntry is a cache entry whose files do not have its sum.
var errDamagedEntry = errors.New("damaged cache entry")

// check reads the entry's files through its sum, before any of it is used.
func (e *cached) check() error {
	files := []struct{ name, sum string }{{e.lines, e.stamp.LinesSum}, {e.facts, e.stamp.FactsSum}}
	if e.stamp.CountsSum != "" {
		files = append(files, struct{ name, sum string }{e.counts, e.stamp.CountsSum})
	}
	for _, f := range files {
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

// replay writes a checked entry's lines and facts; with members, each as
// one gzip member (see Runner.Gzip): the entry's file as it is, where it
// is one, which costs no inflating and compressing again.
func (e *cached) replay(lines, facts io.Writer, members bool) error {
	copyOf := copyFile
	if members {
		copyOf = copyMember
	}
	if err := copyOf(lines, e.lines); err != nil {
		return err
	}
	if facts != nil {
		return copyOf(facts, e.facts)
	}
	return nil
}

// copyMember writes the named file to w as gzip: as it is if it is gzip
// (what this version writes), else compressed (an older warcdedup's plain
// entry).
func copyMember(w io.Writer, name string) error {
	gz, err := gzfile.IsGzip(name)
	if err != nil {
		return err
	}
	if !gz {
		z := gzfile.NewWriter(w)
		if err := copyFile(z, name); err != nil {
			return err
		}
		return z.Close()
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func copyFile(w io.Writer, name string) error {
	f, err := gzfile.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// entryFile is one of an entry's files being written: gzip-compressed
// (a cache of a collection's lines is a fifth of their size so), and
// hashed uncompressed for the entry's stamp as it goes (an entry a plain
// file holds, an older warcdedup's, has the same sum).
type entryFile struct {
	f      *atomicfile.File
	bw     *bufio.Writer
	out    *entryOut // over bw where the bytes are shared
	z      *gzfile.Writer
	sum    hash.Hash
	closed bool  // z is closed
	err    error // closing it failed
}

// createEntryFile creates the named entry file; also, if not nil, gets
// the same compressed bytes (a Runner's gzip member of the file's lines,
// compressed once for both).
func createEntryFile(name string, also io.Writer) (*entryFile, error) {
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return nil, err
	}
	e := &entryFile{f: f, bw: bufio.NewWriterSize(f, 32<<10), sum: sha256.New()}
	var zw io.Writer = e.bw
	if also != nil {
		e.out = &entryOut{w: e.bw}
		zw = io.MultiWriter(also, e.out)
	}
	e.z = gzfile.NewWriter(zw)
	return e, nil
}

// entryOut is the entry file's side of a stream it shares: a failure to
// write the file fails the entry (commit), not the stream, which the
// other writer (the run's output) needs whole.
type entryOut struct {
	w   io.Writer
	err error
}

func (o *entryOut) Write(p []byte) (int, error) {
	if o.err == nil {
		_, o.err = o.w.Write(p)
	}
	return len(p), nil
}

func (e *entryFile) Write(p []byte) (int, error) {
	e.sum.Write(p)
	return e.z.Write(p)
}

// finish ends the gzip stream (once), whether or not the file is then
// committed: the writer it shares its bytes with needs the whole member.
func (e *entryFile) finish() error {
	if !e.closed {
		e.closed, e.err = true, e.z.Close()
	}
	return e.err
}

// commit puts the file in place, unsynced: the stamp's SHA-256 (hex) of
// it is checked before it is used.
func (e *entryFile) commit() (string, error) {
	if err := e.finish(); err != nil {
		e.f.Abort()
		return "", err
	}
	if e.out != nil && e.out.err != nil {
		e.f.Abort()
		return "", e.out.err
	}
	if err := e.bw.Flush(); err != nil {
		e.f.Abort()
		return "", err
	}
	if err := e.f.CommitUnsynced(); err != nil {
		return "", err
	}
	return hex.EncodeToString(e.sum.Sum(nil)), nil
}

func (e *entryFile) abort() { e.f.Abort() }

// entryWriter makes the entry of one input while the file is read; Commit
// makes it count only if the file did not change meanwhile.
type entryWriter struct {
	c      *Cache
	in     Input
	before stamp
	// lines and facts are what the run wrote; counts what each record
	// added to the file's Stats (see RecordCount).
	lines, facts, counts *entryFile
	buf                  []byte
	msgs                 []string
}

// Lines and Facts are the writers of the entry's lines and facts.
func (w *entryWriter) Lines() io.Writer { return w.lines }
func (w *entryWriter) Facts() io.Writer { return w.facts }

// create starts the entry of in, taking the file's stamp before it is
// read. It returns nil where the cache cannot be used for the file. lines
// and facts, if not nil, get the compressed bytes of the entry's lines and
// facts as they are made (see createEntryFile).
func (c *Cache) create(in Input, lines, facts io.Writer) *entryWriter {
	before, ok, err := stampOf(in.Path)
	if err != nil || !ok {
		return nil
	}
	return c.newEntry(in, before, lines, facts)
}

// newEntry starts the entry of in for the version with stamp before.
func (c *Cache) newEntry(in Input, before stamp, lines, facts io.Writer) *entryWriter {
	files := c.paths(in.Name)
	w := &entryWriter{c: c, in: in, before: before}
	var err error
	if w.lines, err = createEntryFile(files.lines, lines); err != nil {
		return nil
	}
	if w.facts, err = createEntryFile(files.facts, facts); err != nil {
		w.lines.abort()
		return nil
	}
	if w.counts, err = createEntryFile(files.counts, nil); err != nil {
		w.lines.abort()
		w.facts.abort()
		return nil
	}
	return w
}

// count notes what a record added to the file's counts. A failed write
// is found when the entry is stored.
func (w *entryWriter) count(c RecordCount) {
	w.buf = appendCount(w.buf[:0], &c)
	w.counts.Write(w.buf)
}

// message notes damage reported, to report again when the entry is used.
func (w *entryWriter) message(err error) {
	if len(w.msgs) < 1000 {
		w.msgs = append(w.msgs, err.Error())
	}
}

// finish ends the gzip streams of the lines and facts, which the writers
// given to create need whole whether or not the entry is then stored.
func (w *entryWriter) finish() error {
	return errors.Join(w.lines.finish(), w.facts.finish())
}

// commit stores the entry, unless the file changed while it was read.
func (w *entryWriter) commit(st Stats, failed error, fileSum string) error {
	after, ok, err := stampOf(w.in.Path)
	if err != nil || !ok || !after.sameFile(&w.before) {
		w.abort()
		return nil
	}
	return w.store(st, failed, fileSum)
}

// store commits the entry's files and then its stamp, which makes it count.
func (w *entryWriter) store(st Stats, failed error, fileSum string) error {
	var sums [3]string
	for i, f := range []*entryFile{w.lines, w.facts, w.counts} {
		sum, err := f.commit()
		if err != nil {
			w.abort()
			return err
		}
		sums[i] = sum
	}
	s := w.before
	s.Name, s.Options, s.Stats, s.Messages = w.in.Name, w.c.key, st, w.msgs
	s.LinesSum, s.FactsSum, s.CountsSum = sums[0], sums[1], sums[2]
	s.SHA256 = fileSum
	if failed != nil {
		s.Failed = failed.Error()
	}
	data, err := json.Marshal(&s)
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(w.c.paths(w.in.Name).stamp, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	// Unsynced too: a stamp cut short by a crash does not parse, and one
	// whose files were cut short does not match their sums.
	return f.CommitUnsynced()
}

func (w *entryWriter) abort() {
	w.lines.abort()
	w.facts.abort()
	w.counts.abort()
}

// Restamp moves the entry of the named input from the version of its
// file that from describes to the one to describes, what it lists kept:
// for an input whose bytes were carried unchanged into another file (the
// WARC members of a WACZ package written anew around them, each checked
// against its SHA-256). It changes nothing, and says why, when the entry
// is not of the version from.
func (c *Cache) Restamp(name string, from, to os.FileInfo) error {
	fs, ok1 := stampFromInfo(from)
	ts, ok2 := stampFromInfo(to)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s: the file system gives no stamp", name)
	}
	e, ok := c.entry(name, &fs)
	if !ok {
		return fmt.Errorf("%s: no cache entry of the version carried over", name)
	}
	s := e.stamp
	s.Size, s.Mtime, s.Ctime, s.Inode, s.Device = ts.Size, ts.Mtime, ts.Ctime, ts.Inode, ts.Device
	data, err := json.Marshal(&s)
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(e.entryFiles.stamp, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	// Unsynced, as store's: a stamp cut short by a crash does not parse.
	return f.CommitUnsynced()
}
