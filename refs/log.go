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
	"sort"
	"strings"
	"sync"
	"time"

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
//	file old-offset old-length new-offset new-length kind payload-digest refers-to-uri refers-to-date
//
// with kind "revisit" (payload-digest as written in the revisit, refers-to
// fields escaped as manifest fields) or "restored" (undone; the last three
// fields "-"): the formats of package rewritelog. Offsets of a later run describe the file as the earlier runs
// left it. A file's entries appear if and only if its replacement did: they
// are first written, synced, to a journal beside the log (LOG.pending)
// before the file is renamed, and a run that finds the journal after a crash
// adds the entries of every file that was in fact replaced.
type Log struct {
	w    io.Writer
	file *os.File // nil when the log is only a writer
	name string

	mu      sync.Mutex
	journal *os.File
	// blocks locates each file's entries in the log file, run by run;
	// mem holds them for a log that is only a writer, and for files
	// replaced in this run until their entries reach the log.
	blocks map[string][]logBlock
	mem    map[string][]*shifts
	end    int64 // size of the log file
	cache  *lru.Cache[logBlock, *shifts]
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
}

func (r *replaced) header() []byte { return append(r.fix.AppendTo(nil), '\n') }

// logBlock is where one file's entries of one run stand in the log file.
type logBlock struct {
	file string
	at   int64 // offset of the first entry line
	n    int   // entries
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
	return &Log{w: w, mem: map[string][]*shifts{}, blocks: map[string][]logBlock{}}
}

// OpenLog opens (or creates) the log file name for appending, indexes the
// entries of earlier runs, and completes the entries of a run that was
// interrupted between replacing a file and logging it.
func OpenLog(name string) (*Log, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	l := &Log{w: f, file: f, name: name, blocks: map[string][]logBlock{}, mem: map[string][]*shifts{},
		cache: lru.New[logBlock, *shifts](16 << 20)}
	done, err := l.index()
	if err == nil {
		err = l.recover(done)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// index reads the log file once and notes where each file's entries are;
// it returns the "# file" lines seen, to recognise blocks already logged.
func (l *Log) index() (map[string]bool, error) {
	seen := map[string]bool{}
	br := bufio.NewReaderSize(l.file, 256<<10)
	var pos int64
	var cur *logBlock
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		if err == io.EOF {
			// A last line without its line feed: a write cut short before
			// its file was replaced. Cut it off; entries only follow a
			// complete "# file" line.
			if terr := l.file.Truncate(pos); terr != nil {
				return nil, fmt.Errorf("%s: dropping a cut-short last line: %w", l.name, terr)
			}
			break
		}
		pos += int64(len(line))
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "#") {
			cur = nil
			fr, ok, ferr := rewritelog.ParseFixity([]byte(line))
			if ferr != nil {
				return nil, fmt.Errorf("%s:%d: %w", l.name, n, ferr)
			}
			if ok {
				seen[fr.File+" "+fr.NewSHA256] = true
				l.blocks[fr.File] = append(l.blocks[fr.File], logBlock{file: fr.File, at: pos})
				cur = &l.blocks[fr.File][len(l.blocks[fr.File])-1]
			}
			continue
		}
		e, perr := rewritelog.ParseEntry([]byte(line))
		if perr != nil {
			return nil, fmt.Errorf("%s:%d: %w", l.name, n, perr)
		}
		if cur == nil || e.File != cur.file {
			return nil, fmt.Errorf("%s:%d: an entry of %s outside its file's block", l.name, n, e.File)
		}
		cur.n++
	}
	l.end = pos
	return seen, nil
}

// journalName is where a file's entries wait while it is being replaced.
func (l *Log) journalName() string { return l.name + ".pending" }

// recover reads the journal an interrupted run left, if any: the entries of
// each file it names are logged if the file was in fact replaced (it now
// has the new size and SHA-256) and were not logged yet.
func (l *Log) recover(logged map[string]bool) error {
	data, err := os.ReadFile(l.journalName())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	type intent struct {
		fr      replaced
		entries []byte
	}
	var intents []*intent
	done := map[string]bool{}
	var cur *intent
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(line, "\n") {
			break // cut short: its file was never renamed
		}
		text := strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(text, "# pending "):
			p := strings.SplitN(strings.TrimPrefix(text, "# pending "), " ", 6)
			if len(p) != 6 {
				return fmt.Errorf("%s: bad line %q", l.journalName(), text)
			}
			fr, _, ferr := rewritelog.ParseFixity([]byte("# file " + strings.Join(p[:5], " ")))
			if ferr != nil {
				return fmt.Errorf("%s: %w", l.journalName(), ferr)
			}
			cur = &intent{fr: replaced{fix: fr, path: p[5]}}
			intents = append(intents, cur)
		case strings.HasPrefix(text, "# end"):
			cur = nil
		case strings.HasPrefix(text, "# done "):
			done[strings.TrimPrefix(text, "# done ")] = true
		case cur != nil:
			cur.entries = append(cur.entries, line...)
		}
	}
	// Workers journal their files in the order they finish; the log lists
	// a run's files in byte order of their escaped names (what its readers
	// check), so the recovered ones are put in that order.
	sort.SliceStable(intents, func(i, j int) bool {
		return manifest.EscapeFile(intents[i].fr.fix.File) < manifest.EscapeFile(intents[j].fr.fix.File)
	})
	var out bytes.Buffer
	for _, in := range intents {
		key := in.fr.fix.File + " " + in.fr.fix.NewSHA256
		if done[key] || logged[key] {
			continue
		}
		size, sum, err := fileSHA256(in.fr.path)
		if err != nil || size != in.fr.fix.NewSize || sum != in.fr.fix.NewSHA256 {
			continue // not replaced: the old version is in place
		}
		if out.Len() == 0 {
			fmt.Fprintf(&out, "# run %s\n# recovered from %s: files replaced before a crash\n", time.Now().UTC().Format(time.RFC3339), l.journalName())
		}
		out.Write(in.fr.header())
		out.Write(in.entries)
	}
	if out.Len() > 0 {
		if _, err := l.file.Write(out.Bytes()); err != nil {
			return err
		}
		if err := l.file.Sync(); err != nil {
			return err
		}
		// Index what was added.
		l.blocks, l.end = map[string][]logBlock{}, 0
		if _, err := l.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := l.index(); err != nil {
			return err
		}
	}
	return os.Remove(l.journalName())
}

// StartRun starts a run's entries: its "# run" line precedes the first of
// them (a run that replaces nothing leaves the log as it was).
func (l *Log) StartRun(now time.Time) {
	l.run = fmt.Sprintf("# run %s\n", now.UTC().Format(time.RFC3339))
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

// write appends b to the log, noting where the log file ends.
func (l *Log) write(b []byte) error {
	if _, err := l.w.Write(b); err != nil {
		return err
	}
	l.mu.Lock()
	l.end += int64(len(b))
	l.mu.Unlock()
	return nil
}

// pending notes, before a file is renamed over its old version, the
// entries it will have; the journal is synced. It registers the entries
// for moving offsets in the file, which the caller must hold the file's
// lock for, from the rename on.
func (l *Log) pending(fr *replaced, entries []rewritelog.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		if l.journal == nil {
			j, err := os.OpenFile(l.journalName(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			l.journal = j
		}
		b := []byte("# pending ")
		b = append(b, bytes.TrimPrefix(fr.fix.AppendTo(nil), []byte("# file "))...)
		b = append(append(append(b, ' '), fr.path...), '\n')
		for i := range entries {
			b = append(entries[i].AppendTo(b), '\n')
		}
		b = append(b, "# end\n"...)
		if _, err := l.journal.Write(b); err != nil {
			return err
		}
		if err := l.journal.Sync(); err != nil {
			return err
		}
	}
	l.mem[fr.fix.File] = append(l.mem[fr.fix.File], newShifts(entries))
	return nil
}

// unpend forgets the entries of a file whose rename failed.
func (l *Log) unpend(fr *replaced) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.mem[fr.fix.File]; len(m) > 0 {
		l.mem[fr.fix.File] = m[:len(m)-1]
	}
}

// commit writes a replaced file's entries to the log, in the order the
// run's files are written.
func (l *Log) commit(fr *replaced, entries []rewritelog.Entry) error {
	var b []byte
	if l.run != "" {
		b = append(b, l.run...)
		l.run = ""
	}
	b = append(b, fr.header()...)
	at := l.end + int64(len(b))
	for i := range entries {
		b = append(entries[i].AppendTo(b), '\n')
	}
	if err := l.write(b); err != nil {
		return err
	}
	if l.file == nil || fr.fix.NewSHA256 == "-" {
		return nil // kept in memory; a dry run's entries move nothing
	}
	if err := l.file.Sync(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// From the log file on: memory holds only what is not there yet.
	f := fr.fix.File
	l.blocks[f] = append(l.blocks[f], logBlock{file: f, at: at, n: len(entries)})
	if m := l.mem[f]; len(m) > 0 {
		l.mem[f] = m[1:]
	}
	if len(l.mem[f]) == 0 {
		delete(l.mem, f)
	}
	if l.journal != nil {
		fmt.Fprintf(l.journal, "# done %s %s\n", f, fr.fix.NewSHA256)
	}
	return nil
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
		if b.at < since {
			continue
		}
		s, err := l.read(b)
		if err != nil {
			return 0, err
		}
		if off, err = s.move(off); err != nil {
			return 0, err
		}
	}
	for _, s := range mem {
		var err error
		if off, err = s.move(off); err != nil {
			return 0, err
		}
	}
	return off, nil
}

// read returns a block's shifts, from the cache or the log file.
func (l *Log) read(b logBlock) (*shifts, error) {
	if s, ok := l.cache.Get(b); ok {
		return s, nil
	}
	br := bufio.NewReader(io.NewSectionReader(l.file, b.at, l.end-b.at))
	entries := make([]rewritelog.Entry, 0, b.n)
	for range b.n {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: reading the entries of %s: %w", l.name, b.file, err)
		}
		e, err := rewritelog.ParseEntry([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		entries = append(entries, e)
	}
	s := newShifts(entries)
	l.cache.Put(b, s, int64(24*len(entries)+64))
	return s, nil
}

// Close ends the log; after a clean run the journal is removed.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.journal != nil {
		err = l.journal.Close()
		if rerr := os.Remove(l.journalName()); err == nil {
			err = rerr
		}
		l.journal = nil
	}
	if l.file != nil {
		if cerr := l.file.Close(); err == nil {
			err = cerr
		}
	}
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
