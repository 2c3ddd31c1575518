package refs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
	"warcdedup/internal/lru"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
)

// The rewrite log lists every record a run rewrote, so that indexes can be
// brought up to date (warccdx), a later run can find originals whose file
// an earlier run shortened, and the rewrite can be undone. It is plain
// text, appended to across runs and never rewritten:
//
//	# run 2026-11-22T10:00:00Z
//	# file a.warc.gz 1000 <sha256 before> 800 <sha256 after>
//	a.warc.gz 100 300 100 100 revisit sha1:... http://example.com/ 2024-01-01T00:00:00Z
//
// A "# file" line starts each replaced file's entries (its size and SHA-256
// before and after: the fixity of the change); each entry is
//
//	file old-offset old-length new-offset new-length kind payload-digest refers-to-uri refers-to-date [original-member]
//
// with kind "revisit" (payload-digest as written in the revisit, refers-to
// fields escaped as manifest fields, and in a .gz file the description of
// the gzip member the record had, for a bit-exact undo) or "restored"
// (undone; the last three fields "-"): the formats of package rewritelog. Offsets of a later run
// describe the file as the earlier runs left it.
//
// A file's entries appear if and only if its replacement did, once, whole
// (the protocol every replacement follows):
//
//   - before a file is renamed over its old version, its entries are
//     written, synced, to a journal beside the log (see journal), and a
//     file is renamed only while the log and the journal are sound;
//   - the log is appended to in the order of the run's files, synced; a
//     write that fails (a full disk) is cut off again and nothing more is
//     logged, the journal keeping the entries;
//   - the journal is removed only once every entry it holds is in the log;
//   - whoever opens the log next (a resumed run, an undo) first completes
//     it from the journal: a block cut short at the end is cut off, and the
//     entries of every file that was in fact replaced (it has the new size
//     and SHA-256) and whose block is not in the log after the journal's
//     base are appended; the others were never renamed, and their
//     temporary files are removed.
//
// The log's size each time it is left whole is kept beside it
// (rewritelog.EndFile): a log found shorter has lost entries and is not
// used. One process at a time opens a log (an exclusive lock on it).
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
	// whole is the size recorded in rewritelog.EndFile.
	whole int64
	cache *lru.Cache[int64, *shifts]
	// run is the header of this run's entries, written before the first.
	run string
	// since: Move leaves out the entries before this offset of the log
	// file (see Since).
	since int64
}

// replaced is a file replaced by its new version: its fixity line and its
// real path, which the journal keeps so that recovery can look at it.
type replaced struct {
	fix  rewritelog.Fixity
	path string
	// old and new are the versions as the replacement left them (see
	// rewritelog.Replacement); nil if they could not be known.
	old, new os.FileInfo
	// journaled: its entries are in the journal (an in-place replacement).
	journaled bool
}

func (r *replaced) header() []byte { return append(r.fix.AppendTo(nil), '\n') }

// logBlock is one file's entries of one run in the log file.
type logBlock struct {
	start int64 // offset of its "# file" line
	at    int64 // offset of the first entry line
	n     int   // entries
	fix   rewritelog.Fixity
	// incomplete: its entries do not account for the file's change of
	// size (see rewritelog.IncompleteError); offsets do not move through it.
	incomplete bool
}

// memBlock is the entries of a file replaced in this run, not yet read
// from the log file.
type memBlock struct {
	s   *shifts
	fix rewritelog.Fixity
}

// shifts is one block's entries, for moving offsets: the old offsets of the
// rewritten records in increasing order, their old lengths, and the bytes
// the file had lost (or gained, negative) after each.
type shifts struct {
	old, oldLen, cum []int64
}

func newShifts(entries []rewritelog.Entry) *shifts {
	s := &shifts{}
	var cum int64
	for _, e := range entries {
		cum += e.OldLength - e.NewLength
		s.old = append(s.old, e.OldOffset)
		s.oldLen = append(s.oldLen, e.OldLength)
		s.cum = append(s.cum, cum)
	}
	return s
}

// ErrRewritten says that the record at an offset is one a run rewrote.
var ErrRewritten = errors.New("a run rewrote the record there")

// move returns where the record at old offset off stands after the block's
// run, or ErrRewritten if it is one the run rewrote.
func (s *shifts) move(off int64) (int64, error) {
	i := sort.Search(len(s.old), func(i int) bool { return s.old[i] >= off })
	if i < len(s.old) && s.old[i] == off {
		return 0, ErrRewritten
	}
	if i > 0 && off < s.old[i-1]+s.oldLen[i-1] {
		return 0, fmt.Errorf("offset %d is inside the record at %d that a run rewrote", off, s.old[i-1])
	}
	if i == 0 {
		return off, nil
	}
	return off - s.cum[i-1], nil
}

// NewLog returns a log written to w only (standard output, a test buffer):
// without a journal, and remembering the entries of the run in memory.
func NewLog(w io.Writer) *Log {
	return &Log{w: w, mem: map[string][]memBlock{}, blocks: map[string][]logBlock{}}
}

// OpenLog opens (or creates) the log file name for appending, locks it,
// completes it from the journal an interrupted run or undo left (see Log),
// and indexes its entries.
func OpenLog(name string) (*Log, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockLog(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &Log{w: f, file: f, name: name, blocks: map[string][]logBlock{}, mem: map[string][]memBlock{},
		cache: lru.New[int64, *shifts](16 << 20)}
	if err := l.open(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// RecoverLog completes the log file name from its journal, if an
// interrupted run or undo left one, and returns the log's size: what a
// listing of the collection made now is to be moved from (Since). A log
// that does not exist is not made.
func RecoverLog(name string) (int64, error) {
	if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
		if _, jerr := os.Stat(name + ".pending"); errors.Is(jerr, os.ErrNotExist) {
			return 0, nil
		}
	}
	l, err := OpenLog(name)
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
	size := fi.Size()
	whole, _, err := rewritelog.ReadEnd(l.name)
	if err != nil {
		return err
	}
	if size < whole {
		return &rewritelog.ShortError{Log: l.name, Size: size, Want: whole}
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
			bs := l.blocks[in.fr.fix.File]
			logged[i] = len(bs) > 0 && bs[len(bs)-1].fix == in.fr.fix
		}
	}
	return l.recover(intents, logged)
}

// matchTail reads the log from base, the journal's, to size, matching each
// block with an intent of the journal, byte for byte; logged marks those
// found. It returns where what was written whole ends: a block that is not
// an intent's whole block (a write cut short) and what follows it are not.
func (l *Log) matchTail(base, size int64, intents []*intent, logged []bool) (int64, error) {
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
			fr, ok, ferr := rewritelog.ParseFixity([]byte(line))
			if ferr != nil {
				return fmt.Errorf("%s:%d: %w", l.name, n, ferr)
			}
			if ok {
				cur, change, dry = &logBlock{start: start, at: pos, fix: fr}, 0, fr.NewSHA256 == "-"
			}
			continue
		}
		e, perr := rewritelog.ParseEntry([]byte(line))
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
func (l *Log) recover(intents []*intent, logged []bool) error {
	// Workers journal their files in the order they finish; the log lists
	// a run's files in byte order of their escaped names (what its readers
	// check), so the recovered ones are put in that order.
	order := make([]int, len(intents))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return manifest.EscapeFile(intents[order[a]].fr.fix.File) < manifest.EscapeFile(intents[order[b]].fr.fix.File)
	})
	var todo []*intent
	for _, i := range order {
		in := intents[i]
		if logged[i] {
			continue
		}
		size, sum, err := fileSHA256(in.fr.path)
		if err != nil || size != in.fr.fix.NewSize || sum != in.fr.fix.NewSHA256 {
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
		if err := rewritelog.WriteEnd(l.name, l.end); err != nil {
			return err
		}
		l.whole = l.end
	}
	// The new versions never renamed are leftovers now.
	for _, in := range intents {
		atomicfile.RemoveLeftovers(in.fr.path)
	}
	return os.Remove(l.journalName())
}

// appendRecovered writes the blocks of the intents to the log, synced, and
// indexes the log again.
func (l *Log) appendRecovered(todo []*intent) error {
	j, err := os.Open(l.journalName())
	if err != nil {
		return err
	}
	defer j.Close()
	start := l.end
	bw := bufio.NewWriterSize(l.file, 256<<10)
	fmt.Fprintf(bw, "%s\n# recovered from %s: files replaced before a crash\n", rewritelog.AppendRun(nil, time.Now()), filepath.Base(l.journalName()))
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
	l.run = string(rewritelog.AppendRun(nil, now)) + "\n"
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

// pending notes, before a file is renamed over its old version, the
// entries it will have; the journal is synced. It registers the entries
// for moving offsets in the file, which the caller must hold the file's
// lock for, from the rename on. An error means the file must not be
// renamed: undo would not find its entries.
func (l *Log) pending(fr *replaced, entries []rewritelog.Entry) error {
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
		broken, err := l.journal.add(fr, entries)
		if err != nil {
			if broken {
				l.failed = err
			}
			return err
		}
		fr.journaled = true
		l.outstanding++
	}
	l.mem[fr.fix.File] = append(l.mem[fr.fix.File], memBlock{s: newShifts(entries), fix: fr.fix})
	return nil
}

// unpend forgets the entries of a file whose rename failed (its intent
// stays in the journal, where recovery finds the old version in place).
func (l *Log) unpend(fr *replaced) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.mem[fr.fix.File]; len(m) > 0 {
		l.mem[fr.fix.File] = m[:len(m)-1]
	}
	if fr.journaled {
		fr.journaled = false
		l.outstanding--
	}
}

// commit writes a replaced file's entries to the log, synced, in the order
// the run's files are written. After a failed write nothing more is
// logged (the entries wait in the journal).
func (l *Log) commit(fr *replaced, entries []rewritelog.Entry) error {
	l.mu.Lock()
	failed := l.failed
	l.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("%s: not logged, as a write of the log failed before (its entries wait in %s): %w", fr.fix.File, l.journalName(), failed)
	}
	var b []byte
	if l.run != "" {
		b = append(b, l.run...)
		l.run = ""
	}
	start := l.end + int64(len(b))
	b = append(b, fr.header()...)
	at := l.end + int64(len(b))
	for i := range entries {
		b = append(entries[i].AppendTo(b), '\n')
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
	if fr.journaled {
		fr.journaled = false
		l.outstanding--
	}
	if l.file == nil || fr.fix.NewSHA256 == "-" {
		return nil // kept in memory; a dry run's entries move nothing
	}
	// From the log file on: memory holds only what is not there yet.
	f := fr.fix.File
	l.blocks[f] = append(l.blocks[f], logBlock{start: start, at: at, n: len(entries), fix: fr.fix})
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

// version returns the "# file" line of the file's last replacement among
// the entries Move follows (those since Since, and this run's): the
// version of the file that the offsets they move are of. False if none.
func (l *Log) version(file string) (rewritelog.Fixity, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.mem[file]; len(m) > 0 {
		return m[len(m)-1].fix, true
	}
	if bs := l.blocks[file]; len(bs) > 0 && bs[len(bs)-1].start >= l.since {
		return bs[len(bs)-1].fix, true
	}
	return rewritelog.Fixity{}, false
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
		s, err := l.read(b)
		if err != nil {
			return 0, err
		}
		if off, err = s.move(off); err != nil {
			return 0, err
		}
	}
	for _, m := range mem {
		var err error
		if off, err = m.s.move(off); err != nil {
			return 0, err
		}
	}
	return off, nil
}

// read returns a block's shifts, from the cache or the log file.
func (l *Log) read(b logBlock) (*shifts, error) {
	if s, ok := l.cache.Get(b.at); ok {
		return s, nil
	}
	l.mu.Lock()
	end := l.end
	l.mu.Unlock()
	br := bufio.NewReader(io.NewSectionReader(l.file, b.at, end-b.at))
	entries := make([]rewritelog.Entry, 0, b.n)
	for range b.n {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: reading the entries of %s: %w", l.name, b.fix.File, err)
		}
		e, err := rewritelog.ParseEntry([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		entries = append(entries, e)
	}
	s := newShifts(entries)
	l.cache.Put(b.at, s, int64(24*len(entries)+64))
	return s, nil
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
		if err = rewritelog.WriteEnd(l.name, l.end); err == nil {
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
	return err
}

// fileSHA256 returns a file's size and SHA-256 (hex).
func fileSHA256(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
