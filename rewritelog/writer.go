package rewritelog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/internal/lru"
	"warcdedup/manifest"
)

// Log writes the rewrite log (the format is the package's: see the
// package comment), for a run or an undo that replaces files, and says
// where a record stands now that the runs it records, and this one so
// far, moved it (Move). The log lets indexes be brought up to date
// (warccdx), a later run find originals whose file an earlier run
// shortened, and the rewrite be undone; it is appended to across runs and
// never rewritten.
//
// A file's entries appear if and only if its replacement did, once, whole
// (the protocol every replacement follows):
//
//   - before a file is renamed over its old version, its entries are
//     written, synced, to a journal beside the log (Journal), and a file
//     is renamed only while the log and the journal are sound;
//   - the log is appended to in the order of the run's files, synced
//     (Append); a write that fails (a full disk) is cut off again and
//     nothing more is logged, the journal keeping the entries;
//   - the journal is removed only once every entry it holds is in the log;
//   - whoever opens the log next (a resumed run, an undo) first completes
//     it from the journal: a block cut short at the end is cut off, and the
//     entries of every file that was in fact replaced (it has the new size
//     and sum) and whose block is not in the log after the journal's
//     base are appended; the others were never renamed, and their
//     temporary files are removed.
//
// The log's size each time it is left whole is kept beside it (EndFile):
// a log found shorter has lost entries and is not used. One process at a
// time opens a log (an exclusive lock on it).
type Log struct {
	w    io.Writer
	file *os.File // nil when the log is only a writer
	name string

	mu      sync.Mutex
	journal *journal
	// outstanding counts the files journaled whose entries are not in
	// the log yet: the journal is kept while there are any.
	outstanding int
	// failed is the write of the log (or journal) that failed: nothing is
	// renamed or logged after it, and the journal is kept.
	failed error
	// blocks locates each file's entries in the log file, run by run;
	// mem holds them for a log that is only a writer, and for files
	// replaced in this run until their entries reach the log.
	blocks map[string][]logBlock
	mem    map[string][]memBlock
	end    int64 // size of the log file
	// whole is the size recorded in EndFile.
	whole int64
	cache *lru.Cache[int64, Block]
	// edits holds every block Move has needed (and this run's), so that
	// one out of the cache is not parsed again (see editStore).
	edits *editStore
	// parsed counts the blocks Move parsed from the log's text.
	parsed int
	// run is the header of this run's entries, written before the first.
	run string
	// since: Move leaves out the entries before this offset of the log
	// file (see Since).
	since int64
}

// An Intent is a file's replacement as the log records it: its "# file"
// line, the file's real path (which the journal keeps, so that recovery
// can look at it) and its entries, in increasing old offset.
type Intent struct {
	Fixity  Fixity
	Path    string
	Entries []Entry
	// journaled: its entries are in the journal and not yet in the log.
	journaled bool
}

func (in *Intent) header() []byte { return append(in.Fixity.AppendTo(nil), '\n') }

// logBlock is one file's entries of one run in the log file.
type logBlock struct {
	start int64 // offset of its "# file" line
	at    int64 // offset of the first entry line
	n     int   // entries
	fix   Fixity
	// incomplete: its entries do not account for the file's change of
	// size (see IncompleteError); offsets do not move through it.
	incomplete bool
}

// memBlock is the entries of a file replaced in this run, not yet read
// from the log file.
type memBlock struct {
	b   Block
	fix Fixity
}

// NewLog returns a log written to w only (standard output, a test buffer):
// without a journal, and remembering the entries of the run in memory.
func NewLog(w io.Writer) *Log {
	return &Log{w: w, mem: map[string][]memBlock{}, blocks: map[string][]logBlock{}}
}

// blockCache is the budget of the blocks of the log file held for Move:
// about 700,000 entries (32 bytes each).
const blockCache = 22 << 20

// Open opens (or creates) the log file name for appending, locks it,
// completes it from the journal an interrupted run or undo left (see Log),
// and indexes its entries.
func Open(name string) (*Log, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockLog(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &Log{w: f, file: f, name: name, blocks: map[string][]logBlock{}, mem: map[string][]memBlock{},
		cache: lru.New[int64, Block](blockCache)}
	if err := l.open(); err != nil {
		f.Close()
		return nil, err
	}
	l.edits = newEditStore(filepath.Dir(name))
	return l, nil
}

// Recover completes the log file name from its journal, if an
// interrupted run or undo left one, and returns the log's size: what a
// listing of the collection made now is to be moved from (Since). A log
// that does not exist is not made.
func Recover(name string) (int64, error) {
	if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
		if _, jerr := os.Stat(name + ".pending"); errors.Is(jerr, os.ErrNotExist) {
			return 0, nil
		}
	}
	l, err := Open(name)
	if err != nil {
		return 0, err
	}
	size := l.Size()
	return size, l.Close()
}

// lockLog takes an exclusive lock on the log file: two processes appending
// to one log (and sharing its journal) would each take the other's blocks
// for its own. A file system without locks is used without.
func lockLog(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil, errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return errors.New("another process has the rewrite log open (a run, undo or index remove of the same files): run one at a time")
	}
	return fmt.Errorf("locking it: %w", err)
}

// open checks the log against its recorded size, completes it from the
// journal and indexes it.
func (l *Log) open() error {
	fi, err := l.file.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		// /dev/null or a FIFO: its entries cannot be read back, and
		// syncing it fails once the first file is already replaced.
		return fmt.Errorf("%s: not a regular file: the rewrite log is read back and synced, and an undo needs it", l.name)
	}
	size := fi.Size()
	whole, _, err := ReadEnd(l.name)
	if err != nil {
		return err
	}
	if size < whole {
		return &ShortError{Log: l.name, Size: size, Want: whole}
	}
	l.whole = whole
	base, intents, haveJournal, err := readJournal(l.journalName())
	if err != nil {
		return err
	}
	logged := make([]bool, len(intents))
	if haveJournal && base >= 0 {
		if size < base {
			return fmt.Errorf("%s has %d bytes, and had %d when %s was begun: entries are lost; restore it from a copy", l.name, size, base, l.journalName())
		}
		cut, err := l.matchTail(base, size, intents, logged)
		if err != nil {
			return err
		}
		if cut < size {
			// The end of a block whose write failed or was cut short:
			// its entries are in the journal.
			if err := l.file.Truncate(cut); err != nil {
				return fmt.Errorf("%s: cutting off a block written in part: %w", l.name, err)
			}
			if err := l.file.Sync(); err != nil {
				return err
			}
		}
		whole = max(whole, cut)
	}
	if err := l.index(whole); err != nil {
		return err
	}
	if !haveJournal {
		return nil
	}
	if base < 0 {
		// A journal of an older version, without a base: a file's intent
		// is logged if the log's last block of the file is its.
		for i, in := range intents {
			bs := l.blocks[in.fix.File]
			logged[i] = len(bs) > 0 && bs[len(bs)-1].fix == in.fix
		}
	}
	return l.recover(intents, logged)
}

// matchTail reads the log from base, the journal's, to size, matching each
// block with an intent of the journal, byte for byte; logged marks those
// found. It returns where what was written whole ends: a block that is not
// an intent's whole block (a write cut short) and what follows it are not.
func (l *Log) matchTail(base, size int64, intents []*pendingIntent, logged []bool) (int64, error) {
	byHeader := map[string][]int{}
	for i, in := range intents {
		byHeader[string(in.header)] = append(byHeader[string(in.header)], i)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(l.file, base, size-base), 256<<10)
	cut := base
	h := sha256.New()
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return cut, nil // the end, or a line cut short
		}
		if !bytes.HasPrefix(line, []byte("# file ")) {
			if line[0] != '#' {
				return cut, nil // an entry outside any whole block
			}
			cut += int64(len(line)) // "# run", comments
			continue
		}
		cands := byHeader[string(line)]
		if len(cands) == 0 {
			return cut, nil
		}
		in := intents[cands[0]]
		h.Reset()
		if n, err := io.CopyN(h, br, in.n); err != nil || n != in.n || [32]byte(h.Sum(nil)) != in.sum {
			return cut, nil
		}
		byHeader[string(line)] = cands[1:]
		logged[cands[0]] = true
		cut += int64(len(line)) + in.n
	}
}

// index reads the log file once and notes where each file's blocks are. A
// last line without its line feed beyond whole bytes (a write cut short
// with no journal to complete it: a crash of an older version) is cut off.
func (l *Log) index(whole int64) error {
	l.blocks, l.end = map[string][]logBlock{}, 0
	if _, err := l.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(l.file, 256<<10)
	var pos int64
	var cur *logBlock
	var change int64 // what cur's entries saved
	dry := false     // cur is a dry run's, which moved nothing
	closeBlock := func() {
		if cur == nil {
			return
		}
		cur.incomplete = cur.fix.OldSize-change != cur.fix.NewSize
		if !dry {
			l.blocks[cur.fix.File] = append(l.blocks[cur.fix.File], *cur)
		}
		cur = nil
	}
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		if err == io.EOF {
			if pos < whole {
				return fmt.Errorf("%s:%d: a line cut short before the end the log had when last left whole (%d bytes)", l.name, n, whole)
			}
			if terr := l.file.Truncate(pos); terr != nil {
				return fmt.Errorf("%s: dropping a cut-short last line: %w", l.name, terr)
			}
			break
		}
		start := pos
		pos += int64(len(line))
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "#") {
			closeBlock()
			fr, ok, ferr := ParseFixity([]byte(line))
			if ferr != nil {
				return fmt.Errorf("%s:%d: %w", l.name, n, ferr)
			}
			if ok {
				cur, change, dry = &logBlock{start: start, at: pos, fix: fr}, 0, fr.NewSum == "-"
			}
			continue
		}
		e, perr := ParseEntry([]byte(line))
		if perr != nil {
			return fmt.Errorf("%s:%d: %w", l.name, n, perr)
		}
		if cur == nil || e.File != cur.fix.File {
			return fmt.Errorf("%s:%d: an entry of %s outside its file's block", l.name, n, e.File)
		}
		cur.n++
		change += e.OldLength - e.NewLength
	}
	closeBlock()
	l.end = pos
	return nil
}

// journalName is where a file's entries wait while it is being replaced.
func (l *Log) journalName() string { return l.name + ".pending" }

// recover appends the blocks of the intents not logged whose files were
// replaced, records the log's size as whole and removes the journal. A
// failed write is cut off again, and the journal kept.
func (l *Log) recover(intents []*pendingIntent, logged []bool) error {
	// Workers journal their files in the order they finish; the log lists
	// a run's files in byte order of their escaped names (what its readers
	// check), so the recovered ones are put in that order.
	order := make([]int, len(intents))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return manifest.EscapeFile(intents[order[a]].fix.File) < manifest.EscapeFile(intents[order[b]].fix.File)
	})
	var todo []*pendingIntent
	for _, i := range order {
		in := intents[i]
		if logged[i] {
			continue
		}
		h, err := fixity.HashFile(in.path, fixity.Like(in.fix.NewSum)...)
		if err != nil || !h.Is(in.fix.NewSize, in.fix.NewSum) {
			continue // not replaced: the old version is in place
		}
		todo = append(todo, in)
	}
	if len(todo) > 0 {
		if err := l.appendRecovered(todo); err != nil {
			return fmt.Errorf("completing %s from its journal %s (kept: make room and run again): %w", l.name, l.journalName(), err)
		}
	}
	if l.end != l.whole {
		if err := WriteEnd(l.name, l.end); err != nil {
			return err
		}
		l.whole = l.end
	}
	// The new versions never renamed are leftovers now, and so are the
	// files replaced, but only as journaled: a kill while a replacement
	// gave the name back to a file a writer had open left the file, with
	// what the writer appended (and appends), under the temporary name.
	var kept []string
	for _, in := range intents {
		k, err := in.leftovers()
		kept = append(kept, k...)
		if err != nil {
			// The journal stays: the next opener looks again.
			return fmt.Errorf("completing %s from its journal %s (kept): %w", l.name, l.journalName(), err)
		}
	}
	if err := os.Remove(l.journalName()); err != nil {
		return err
	}
	if len(kept) > 0 {
		return fmt.Errorf("completing %s from its journal: %s: look at them (another process may have written to them while the interrupted run replaced them), then run again", l.name, strings.Join(kept, "; "))
	}
	return nil
}

// leftovers removes the temporary files of the intent's file, but keeps
// beside the file (atomicfile.Keep) one that holds either of its versions
// as journaled with bytes after it (what a writer appended), and says
// what it kept; an error if one could not be kept, and is left where the
// next cleanup would remove it. Any other leftover (a new version cut
// short by a kill, one of the versions) is removed, as before.
func (in *pendingIntent) leftovers() ([]string, error) {
	var kept []string
	for _, p := range atomicfile.Leftovers(in.path) {
		why := in.appendedTo(p)
		if why == "" {
			os.Remove(p)
			continue
		}
		k, err := atomicfile.Keep(p, in.path)
		switch {
		case k == "":
			return kept, fmt.Errorf("%s, a temporary file of %s, holds %s, and cannot be given a name of its own: %w", p, in.path, why, err)
		case err != nil:
			kept = append(kept, fmt.Sprintf("%s (%s) kept as %s, and still there: %v", p, why, k, err))
		default:
			kept = append(kept, fmt.Sprintf("%s (%s) kept as %s", p, why, k))
		}
	}
	return kept, nil
}

// appendedTo says which version of the intent's file the file at p is,
// with bytes after it, "" if neither.
func (in *pendingIntent) appendedTo(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	for _, v := range []struct {
		what string
		size int64
		sum  string
	}{{"the file as it was", in.fix.OldSize, in.fix.OldSum}, {"its new version", in.fix.NewSize, in.fix.NewSum}} {
		if fi.Size() <= v.size {
			continue
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return ""
		}
		h, err := fixity.HashReader(io.LimitReader(f, v.size), fixity.Like(v.sum)...)
		if err == nil && h.Is(v.size, v.sum) {
			return fmt.Sprintf("%s, and %d bytes written after it", v.what, fi.Size()-v.size)
		}
	}
	return ""
}

// appendRecovered writes the blocks of the intents to the log, synced, and
// indexes the log again.
func (l *Log) appendRecovered(todo []*pendingIntent) error {
	j, err := os.Open(l.journalName())
	if err != nil {
		return err
	}
	defer j.Close()
	start := l.end
	bw := bufio.NewWriterSize(l.file, 256<<10)
	fmt.Fprintf(bw, "%s\n# recovered from %s: files replaced before a crash\n", AppendRun(nil, time.Now()), filepath.Base(l.journalName()))
	for _, in := range todo {
		bw.Write(in.header)
		if err := in.entries(j, bw); err != nil {
			return fmt.Errorf("%s: %w", l.journalName(), err)
		}
	}
	err = bw.Flush()
	if err == nil {
		err = l.file.Sync()
	}
	if err != nil {
		if terr := l.file.Truncate(start); terr == nil {
			l.file.Sync()
		}
		return err
	}
	return l.index(l.whole)
}

// StartRun starts a run's entries: its "# run" line precedes the first of
// them (a run that replaces nothing leaves the log as it was).
func (l *Log) StartRun(now time.Time) {
	l.run = string(AppendRun(nil, now)) + "\n"
}

// Size is the size of the log file (0 for a log that is only a writer).
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Since makes Move leave out the entries in the first size bytes of the
// log file: the manifest it moves offsets of was made when the log had
// that size, from the files those entries describe. By default every entry
// counts (a manifest made before the first run).
func (l *Log) Since(size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since = size
}

// Journal notes, before a file is renamed over its old version, the
// entries it will have; the journal is synced. It registers the entries
// for moving offsets in the file, which the caller must hold the file's
// lock for, from the rename on. An error means the file must not be
// renamed: undo would not find its entries. A log that is only a writer
// keeps no journal (its entries are in memory until Append).
func (l *Log) Journal(in *Intent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		if l.failed != nil {
			return fmt.Errorf("%s could not be written: %w", l.name, l.failed)
		}
		if l.journal == nil {
			j, err := createJournal(l.journalName(), l.end)
			if err != nil {
				return err
			}
			l.journal = j
		}
		broken, err := l.journal.add(in)
		if err != nil {
			if broken {
				l.failed = err
			}
			return err
		}
		in.journaled = true
		l.outstanding++
	}
	l.mem[in.Fixity.File] = append(l.mem[in.Fixity.File], memBlock{b: NewBlock(in.Entries), fix: in.Fixity})
	return nil
}

// Unjournal forgets the entries of a file whose rename failed (its intent
// stays in the journal, where recovery finds the old version in place).
func (l *Log) Unjournal(in *Intent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.mem[in.Fixity.File]; len(m) > 0 {
		l.mem[in.Fixity.File] = m[:len(m)-1]
	}
	if in.journaled {
		in.journaled = false
		l.outstanding--
	}
}

// Append writes a replaced file's entries to the log, synced, in the
// order the run's files are written (a file replaced in place is
// journaled first; a dry run's, or one written elsewhere, is not). After a
// failed write nothing more is logged (the entries wait in the journal).
func (l *Log) Append(in *Intent) error {
	l.mu.Lock()
	failed := l.failed
	l.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("%s: not logged, as a write of the log failed before (its entries wait in %s): %w", in.Fixity.File, l.journalName(), failed)
	}
	var b []byte
	if l.run != "" {
		b = append(b, l.run...)
		l.run = ""
	}
	start := l.end + int64(len(b))
	b = append(b, in.header()...)
	at := l.end + int64(len(b))
	for i := range in.Entries {
		b = append(in.Entries[i].AppendTo(b), '\n')
	}
	if _, err := l.w.Write(b); err != nil {
		return l.fail(err)
	}
	if l.file != nil {
		if err := l.file.Sync(); err != nil {
			return l.fail(err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.end += int64(len(b))
	if in.journaled {
		in.journaled = false
		l.outstanding--
	}
	if l.file == nil || in.Fixity.NewSum == "-" {
		return nil // kept in memory; a dry run's entries move nothing
	}
	// From the log file on: memory holds only what is not there yet.
	f := in.Fixity.File
	l.blocks[f] = append(l.blocks[f], logBlock{start: start, at: at, n: len(in.Entries), fix: in.Fixity})
	l.edits.put(at, NewBlock(in.Entries))
	if m := l.mem[f]; len(m) > 0 {
		l.mem[f] = m[1:]
	}
	if len(l.mem[f]) == 0 {
		delete(l.mem, f)
	}
	return nil
}

// fail notes a failed write of the log: what was written of the block is
// cut off again (or, if that fails too, at the next open), so that the log
// holds whole blocks only; the journal keeps the entries.
func (l *Log) fail(err error) error {
	if l.file != nil {
		if terr := l.file.Truncate(l.end); terr == nil {
			l.file.Sync()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = err
	}
	return err
}

// Version returns the "# file" line of the file's last replacement among
// the entries Move follows (those since Since, and this run's): the
// version of the file that the offsets they move are of. False if none.
func (l *Log) Version(file string) (Fixity, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.mem[file]; len(m) > 0 {
		return m[len(m)-1].fix, true
	}
	if bs := l.blocks[file]; len(bs) > 0 && bs[len(bs)-1].start >= l.since {
		return bs[len(bs)-1].fix, true
	}
	return Fixity{}, false
}

// Move returns where the record that the manifest puts at offset off of
// file stands now, after the runs this log records (and the files this run
// replaced so far), or ErrRewritten.
func (l *Log) Move(file string, off int64) (int64, error) {
	if l == nil {
		return off, nil
	}
	l.mu.Lock()
	blocks := l.blocks[file]
	mem := l.mem[file]
	since := l.since
	l.mu.Unlock()
	for _, b := range blocks {
		if b.start < since {
			continue
		}
		if b.incomplete {
			return 0, fmt.Errorf("the entries of %s's replacement at byte %d of %s account for less than its change from %d to %d bytes: entries are missing, and offsets in the file cannot be followed",
				file, b.at, l.name, b.fix.OldSize, b.fix.NewSize)
		}
		var err error
		if off, err = l.follow(b, off); err != nil {
			return 0, err
		}
	}
	for _, m := range mem {
		var err error
		if off, err = m.b.Follow(off); err != nil {
			return 0, err
		}
	}
	return off, nil
}

// follow moves off through a block of the log file: through the block
// in the cache, or by a search of its entries in the edit store, or
// through the block parsed from the log (and put in both).
func (l *Log) follow(b logBlock, off int64) (int64, error) {
	if blk, ok := l.cache.Get(b.at); ok {
		return blk.Follow(off)
	}
	if moved, ok, err := l.edits.follow(b.at, off); ok {
		return moved, err
	}
	blk, err := l.read(b)
	if err != nil {
		return 0, err
	}
	return blk.Follow(off)
}

// read returns a block of the log file, from the cache or the file.
func (l *Log) read(b logBlock) (Block, error) {
	if blk, ok := l.cache.Get(b.at); ok {
		return blk, nil
	}
	l.mu.Lock()
	end := l.end
	l.parsed++
	l.mu.Unlock()
	br := bufio.NewReader(io.NewSectionReader(l.file, b.at, end-b.at))
	entries := make([]Entry, 0, b.n)
	for range b.n {
		line, err := br.ReadString('\n')
		if err != nil {
			return Block{}, fmt.Errorf("%s: reading the entries of %s: %w", l.name, b.fix.File, err)
		}
		e, err := ParseEntry([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			return Block{}, fmt.Errorf("%s: %w", l.name, err)
		}
		entries = append(entries, e)
	}
	blk := NewBlock(entries)
	l.cache.Put(b.at, blk, int64(32*blk.Len()+64))
	l.edits.put(b.at, blk)
	return blk, nil
}

// Close ends the log. The journal is removed, and the log's size recorded
// as whole, only if every entry it holds is in the log; otherwise it is
// kept for the next opener, and Close says so.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil
	}
	var err error
	whole := l.failed == nil && l.outstanding == 0
	if whole && l.end != l.whole {
		if err = WriteEnd(l.name, l.end); err == nil {
			l.whole = l.end
		}
		whole = err == nil
	}
	if l.journal != nil {
		jerr := l.journal.close()
		switch {
		case whole:
			if rerr := os.Remove(l.journalName()); jerr == nil {
				jerr = rerr
			}
		case err == nil && l.failed != nil:
			err = fmt.Errorf("the journal %s is kept for the next run or undo, which completes the log from it: %w", l.journalName(), l.failed)
		case err == nil:
			err = fmt.Errorf("the journal %s is kept: %d replaced files are not logged yet; the next run or undo completes the log from it", l.journalName(), l.outstanding)
		}
		if err == nil {
			err = jerr
		}
		l.journal = nil
	}
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	l.file = nil
	l.edits.close()
	return err
}
