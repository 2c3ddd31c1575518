// Package rewritelog is the rewrite log of warcrefs, its format, writer and
// readers: one line per rewritten record, saying where it was and where it
// is, so that anything that points into the rewritten files (a CDX index,
// an original a later run reads, undo) can follow. Log writes it, crash
// safe (its journal: see Log); Reader reads it line by line, Moves holds
// it in memory to follow offsets through it, Tail follows them through a
// log another process is appending to; Block is the one follower of an
// offset through one replacement of a file, which all of them use.
//
// The log is plain text, fields separated by one space, appended to across
// runs; a line "# run <RFC3339 time>" starts each run's entries, a line
// "# file NAME OLD-SIZE OLD-SUM NEW-SIZE NEW-SUM" each replaced file's
// entries of a run (its fixity: see Fixity), and other lines starting with
// "#" are comments. A sum is "blake3:" and the 64 lower-case hex digits of
// the file's BLAKE3-256, or 64 hex digits with no label, the file's
// SHA-256: logs written before 2026-11-27 hold those, and a new version
// whose SHA-256 the rewrite's check takes anyway (a WACZ package's
// member, a file of a crawl run with --index) is logged by it since
// 2026-11-28; a file is checked against such a sum with SHA-256
// (fixity.AlgorithmOf); "-" is a dry run's, which wrote nothing. A replacement of a file whose version before was logged with
// SHA-256 gives OLD-SUM in SHA-256 too, so that a line's OLD-SUM is the
// NEW-SUM of the line before it whenever nothing else changed the file:
//
//	file old-offset old-length new-offset new-length kind payload-digest refers-to-uri refers-to-date [original-member]
//
// file is the name relative to the collection root, escaped as manifest
// field 1 (manifest.EscapeFile); offsets and lengths are bytes in the file
// as stored (the gzip member of a .warc.gz), before and after; kind is
// "revisit" (a response became a revisit) or "restored" (a revisit this
// toolchain wrote became the full record again); payload-digest is the
// revisit's WARC-Payload-Digest as written ("sha1:..."), refers-to-uri and
// refers-to-date its WARC-Refers-To-Target-URI (escaped as
// manifest.EscapeField) and WARC-Refers-To-Date; the last three are "-"
// for restored. original-member, a tenth field a revisit entry may have,
// describes the gzip member the revisit replaced in a .warc.gz (its
// length, header and BLAKE3: the text form of a gzmember.Description,
// "gz2.LENGTH.HEADER.PREFIX.BLAKE3", or "gz1.LENGTH.HEADER.PREFIX.SHA256"
// in logs of earlier versions; its length is old-length), so that
// undo can rebuild that member bit for bit; "-" or no tenth field: none
// (an uncompressed file, a member that could not be described, a log
// written before the field). Lines of nine fields stay valid, and lines of
// five fields (warcrefs before this format) are revisits whose digest and
// references are unknown.
//
// Within a run a file's entries are in increasing old-offset order, files
// in byte order of their names; a later run's offsets are those of the
// file as the earlier runs left it. The records between two entries move
// by what the entries before them in the same run saved.
//
// A "# file" line and the entries after it are a block: the entries of one
// replacement of the file, which account for its change of size (its old
// size less what each entry saved is its new size). A block that does not
// is incomplete: entries are missing (the log was cut, or a write of it
// failed), and offsets in the file cannot be followed through it.
package rewritelog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"warcdedup/gzmember"
	"warcdedup/manifest"
)

// Kind is what a rewrite did to a record.
type Kind uint8

// The kinds of rewrite.
const (
	Revisit  Kind = 1 + iota // a response became a revisit
	Restored                 // a revisit became the full record again
)

func (k Kind) String() string {
	switch k {
	case Revisit:
		return "revisit"
	case Restored:
		return "restored"
	}
	return "?"
}

// Entry is one line of the log.
type Entry struct {
	File                  string // relative name, unescaped
	OldOffset, OldLength  int64
	NewOffset, NewLength  int64
	Kind                  Kind
	PayloadDigest         string // revisit: WARC-Payload-Digest as written; "" if unknown (five fields) or restored
	RefersToURI, RefersTo string // revisit: as in the log (manifest escaping); "" otherwise
	// OriginalMember is, for a revisit in a .warc.gz, the text form of the
	// gzmember.Description of the member it replaced (field 10); "" if
	// none. It is checked when read: it parses, and its length is
	// OldLength.
	OriginalMember string
	Run            int   // the run it belongs to: index in Reader.Runs
	Line           int64 // 1-based line number in the log
}

// AppendTo appends the entry's log line, without a line end.
func (e *Entry) AppendTo(dst []byte) []byte {
	dst = append(dst, manifest.EscapeFile(e.File)...)
	for _, n := range []int64{e.OldOffset, e.OldLength, e.NewOffset, e.NewLength} {
		dst = strconv.AppendInt(append(dst, ' '), n, 10)
	}
	dst = append(append(dst, ' '), e.Kind.String()...)
	for _, s := range []string{e.PayloadDigest, e.RefersToURI, e.RefersTo} {
		if s == "" {
			s = "-"
		}
		dst = append(append(dst, ' '), s...)
	}
	if e.OriginalMember != "" {
		// Nine fields without it: the lines of uncompressed files stay as
		// readers of the nine-field form expect them.
		dst = append(append(dst, ' '), e.OriginalMember...)
	}
	return dst
}

// AppendRun appends the line that starts a run at t.
func AppendRun(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(append(dst, "# run "...), time.RFC3339)
}

// Reader reads a log, checking that it is in order and that its offsets
// add up; an error names the log and the line.
type Reader struct {
	name string
	src  io.Reader
	sc   *bufio.Scanner
	line int64
	// lineStart is the offset, in what src gives, of the line read last,
	// and lineEnd that of the line after it: where a Moves finds an entry
	// again.
	lineStart, lineEnd int64
	// base is where src was when the Reader started, if it can seek: the
	// offsets above are from there.
	base int64
	raw  rawEntry
	// Runs are the start times of the runs read so far; the entries before
	// the first "# run" line belong to a run with the zero time.
	Runs []time.Time
	// Fixity, if set, receives each "# file" line.
	Fixity func(Fixity) error
	// Incomplete, if set, receives each block whose entries do not account
	// for its file's change of size, and the reading goes on unless it
	// returns an error. If nil, such a block is an error of Next.
	Incomplete func(*IncompleteError) error
	block      openBlock
	// The last entry of the current run, for the order and offset checks.
	prevFile  []byte // as escaped in the log, whose byte order it follows
	prevEnd   int64  // old offset + old length
	shift     int64  // bytes the current file's entries of this run saved
	seenFirst bool
	legacy    bool
	entry     Entry
	unescaped []byte
	// numbers, if set, are the line numbers of the lines to read, in
	// the log they were taken from (ByFile).
	numbers []int64
}

// openBlock is the block being read: its "# file" line and what its
// entries so far changed of the file's size.
type openBlock struct {
	open   bool
	fix    Fixity
	line   int64
	change int64 // bytes saved (negative: gained) by its entries
}

// IncompleteError is a block whose entries do not account for the change
// of its file's size: entries of it are missing.
type IncompleteError struct {
	Log    string
	Line   int64 // of its "# file" line
	Fixity Fixity
	Change int64 // what its entries account for: old size less new size
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("%s: line %d: the entries of %s's replacement account for %d bytes of its change from %d to %d bytes: entries are missing (the log was cut, or a write of it failed), and offsets in the file cannot be followed",
		e.Log, e.Line, e.Fixity.File, e.Change, e.Fixity.OldSize, e.Fixity.NewSize)
}

// closeBlock checks the open block, if any, when it ends.
func (r *Reader) closeBlock() error {
	b := &r.block
	if !b.open {
		return nil
	}
	b.open = false
	if b.fix.OldSize-b.change == b.fix.NewSize {
		return nil
	}
	ie := &IncompleteError{Log: r.name, Line: b.line, Fixity: b.fix, Change: b.change}
	if r.Incomplete != nil {
		return r.Incomplete(ie)
	}
	return ie
}

// rawEntry is an entry whose text fields point into the line read, so
// that loading a log of millions of lines makes no garbage.
type rawEntry struct {
	file                           []byte // unescaped
	oldOff, oldLen, newOff, newLen int64
	kind                           Kind
	digest, refURI, refDate        []byte // nil for "-"
	member                         []byte // field 10; nil for "-" or none
	run                            int
	line                           int64
	pos                            int64 // offset of the line in the reader's source
}

// NewReader returns a Reader of the log r, named name in errors.
func NewReader(r io.Reader, name string) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	rd := &Reader{name: name, src: r, sc: sc}
	if sk, ok := r.(io.Seeker); ok {
		if at, err := sk.Seek(0, io.SeekCurrent); err == nil {
			rd.base = at
		}
	}
	sc.Split(rd.splitLines)
	return rd
}

// splitLines is bufio.ScanLines, noting where each line starts in the
// source (a Scan returns as soon as its split gives a line).
func (r *Reader) splitLines(data []byte, atEOF bool) (int, []byte, error) {
	advance, token, err := bufio.ScanLines(data, atEOF)
	if token != nil {
		r.lineStart, r.lineEnd = r.lineEnd, r.lineEnd+int64(advance)
	}
	return advance, token, err
}

// Legacy reports whether five-field lines were read.
func (r *Reader) Legacy() bool { return r.legacy }

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", r.name, r.line, fmt.Sprintf(format, args...))
}

// Next returns the next entry, or io.EOF. The entry is valid until the
// next call.
func (r *Reader) Next() (*Entry, error) {
	e, err := r.next()
	if err != nil {
		return nil, err
	}
	r.entry = e.entry()
	r.entry.Run, r.entry.Line = e.run, e.line
	return &r.entry, nil
}

// next reads the next entry; its slices are valid until the next call.
func (r *Reader) next() (*rawEntry, error) {
	for r.sc.Scan() {
		r.line++
		if r.numbers != nil {
			// A log grouped by file (ByFile): each line keeps its
			// number in the log.
			r.line = r.numbers[0]
			r.numbers = r.numbers[1:]
		}
		text := r.sc.Bytes()
		if len(text) == 0 {
			continue
		}
		if text[0] == '#' {
			if err := r.closeBlock(); err != nil {
				return nil, err
			}
			if rest, ok := bytes.CutPrefix(text, []byte("# run ")); ok {
				t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(rest)))
				if err != nil {
					return nil, r.errorf("run time: %v", err)
				}
				r.startRun(t)
			}
			if f, ok, err := ParseFixity(text); ok {
				if err == nil && r.Fixity != nil {
					err = r.Fixity(f)
				}
				if err != nil {
					return nil, r.errorf("%v", err)
				}
				r.block = openBlock{open: true, fix: f, line: r.line}
			}
			continue
		}
		if err := r.parse(text); err != nil {
			return nil, err
		}
		if b := &r.block; b.open {
			if string(r.raw.file) != b.fix.File {
				return nil, r.errorf("an entry of %s in the block of %s (line %d)", r.raw.file, b.fix.File, b.line)
			}
			b.change += r.raw.oldLen - r.raw.newLen
		}
		return &r.raw, nil
	}
	if err := r.sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: after line %d: %w", r.name, r.line, err)
	}
	if err := r.closeBlock(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (r *Reader) startRun(t time.Time) {
	r.Runs = append(r.Runs, t)
	r.prevFile, r.prevEnd, r.shift, r.seenFirst = r.prevFile[:0], 0, 0, false
}

var errFields = errors.New("want 9 or 10 fields (file old-offset old-length new-offset new-length kind payload-digest refers-to-uri refers-to-date [original-member]) or the 5 of older logs")

// entry is e as an Entry, without its run and line.
func (e *rawEntry) entry() Entry {
	return Entry{File: string(e.file), OldOffset: e.oldOff, OldLength: e.oldLen, NewOffset: e.newOff, NewLength: e.newLen,
		Kind: e.kind, PayloadDigest: string(e.digest), RefersToURI: string(e.refURI), RefersTo: string(e.refDate), OriginalMember: string(e.member)}
}

var dash = []byte("-")

func (r *Reader) parse(text []byte) error {
	if len(r.Runs) == 0 {
		r.startRun(time.Time{})
	}
	var f [10][]byte
	e, n, err := parseFields(text, &f, &r.unescaped)
	if err != nil {
		return r.errorf("%v", err)
	}
	if n == 5 {
		r.legacy = true
	}
	e.run, e.line, e.pos = len(r.Runs)-1, r.line, r.lineStart
	// Order within the run: files in byte order, offsets increasing.
	switch c := bytes.Compare(f[0], r.prevFile); {
	case !r.seenFirst || c > 0:
		r.shift = 0
	case c < 0:
		return r.errorf("%s after %s: files out of order within a run", f[0], r.prevFile)
	case e.oldOff < r.prevEnd:
		return r.errorf("old offset %d before the end (%d) of the previous entry of the file", e.oldOff, r.prevEnd)
	}
	if e.newOff != e.oldOff+r.shift {
		return r.errorf("new offset %d: the entries before it in this run moved offset %d to %d", e.newOff, e.oldOff, e.oldOff+r.shift)
	}
	r.shift += e.newLen - e.oldLen
	r.prevFile, r.prevEnd, r.seenFirst = append(r.prevFile[:0], f[0]...), e.oldOff+e.oldLen, true
	r.raw = e
	return nil
}

// parseFields reads one entry line into e, splitting it into f; the
// unescaped file name is kept in *buf. It returns the number of fields.
func parseFields(text []byte, f *[10][]byte, buf *[]byte) (rawEntry, int, error) {
	n := 0
	for rest := text; ; n++ {
		i := bytes.IndexByte(rest, ' ')
		if n == len(f) {
			return rawEntry{}, n, fmt.Errorf("more than 10 fields: %v", errFields)
		}
		if i < 0 {
			f[n] = rest
			n++
			break
		}
		f[n], rest = rest[:i], rest[i+1:]
	}
	if n != 10 && n != 9 && n != 5 {
		return rawEntry{}, n, fmt.Errorf("%d fields: %v", n, errFields)
	}
	name := f[0]
	if bytes.IndexByte(name, '%') >= 0 {
		u, err := manifest.UnescapeFile(string(name))
		if err != nil {
			return rawEntry{}, n, fmt.Errorf("file %q: %v", name, err)
		}
		*buf = append((*buf)[:0], u...)
		name = *buf
	}
	if len(name) == 0 {
		return rawEntry{}, n, errors.New("no file name")
	}
	var num [4]int64
	for i := range num {
		v, ok := parseUint(f[i+1])
		if !ok {
			return rawEntry{}, n, fmt.Errorf("field %d %q: want a number", i+2, f[i+1])
		}
		num[i] = v
	}
	e := rawEntry{file: name, oldOff: num[0], oldLen: num[1], newOff: num[2], newLen: num[3], kind: Revisit}
	if n >= 9 {
		none := bytes.Equal(f[6], dash) || bytes.Equal(f[7], dash) || bytes.Equal(f[8], dash)
		all := bytes.Equal(f[6], dash) && bytes.Equal(f[7], dash) && bytes.Equal(f[8], dash)
		if n == 10 {
			all = all && bytes.Equal(f[9], dash)
		}
		switch string(f[5]) {
		case "revisit":
			if none {
				return rawEntry{}, n, errors.New("a revisit needs its payload digest and the URI and date it refers to")
			}
			e.digest, e.refURI, e.refDate = f[6], f[7], f[8]
		case "restored":
			e.kind = Restored
			if !all {
				return rawEntry{}, n, errors.New("a restored record has \"-\" for digest and references (and original member)")
			}
		default:
			return rawEntry{}, n, fmt.Errorf("kind %q: want revisit or restored", f[5])
		}
	}
	if e.oldLen == 0 || e.newLen == 0 {
		return rawEntry{}, n, errors.New("a record of length 0")
	}
	if n == 10 && e.kind == Revisit && !bytes.Equal(f[9], dash) {
		if err := checkMember(f[9], e.oldLen); err != nil {
			return rawEntry{}, n, err
		}
		e.member = f[9]
	}
	return e, n, nil
}

// checkMember checks an original-member field: a gzip member description
// (gzmember.Parse) of the record the entry replaced, old-length bytes.
func checkMember(field []byte, oldLen int64) error {
	d, err := gzmember.Parse(string(field))
	if err != nil {
		return fmt.Errorf("field 10 (original-member): %v", err)
	}
	if d.Length != oldLen {
		return fmt.Errorf("field 10 (original-member) describes a member of %d bytes, and the entry's old length is %d", d.Length, oldLen)
	}
	return nil
}

// ParseEntry reads one entry line (without its line end) on its own,
// without the order checks of a Reader.
func ParseEntry(line []byte) (Entry, error) {
	var f [10][]byte
	var buf []byte
	e, _, err := parseFields(line, &f, &buf)
	if err != nil {
		return Entry{}, err
	}
	return e.entry(), nil
}

func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// Fixity is a replaced file's size and sum before and after: the "# file"
// line that starts the file's entries of a run, for a preservation
// system's fixity records. A sum names its algorithm (see the package
// comment and fixity.AlgorithmOf): "blake3:HEX", or bare hex for a SHA-256
// (logs of earlier versions; WACZ members and --index files' new versions).
type Fixity struct {
	File    string // relative name, unescaped
	OldSize int64
	OldSum  string
	NewSize int64
	NewSum  string // "-" for a dry run, which writes nothing
}

// AppendTo appends the fixity line, without a line end.
func (f *Fixity) AppendTo(dst []byte) []byte {
	return fmt.Appendf(dst, "# file %s %d %s %d %s", manifest.EscapeFile(f.File), f.OldSize, f.OldSum, f.NewSize, f.NewSum)
}

// ParseFixity reads a "# file" line (without its line end); ok is false for
// any other line.
func ParseFixity(line []byte) (f Fixity, ok bool, err error) {
	rest, ok := bytes.CutPrefix(line, []byte("# file "))
	if !ok {
		return Fixity{}, false, nil
	}
	p := strings.Split(string(rest), " ")
	if len(p) != 5 {
		return Fixity{}, true, fmt.Errorf("%q: want \"# file NAME OLD-SIZE OLD-SUM NEW-SIZE NEW-SUM\"", line)
	}
	name, err := manifest.UnescapeFile(p[0])
	if err != nil {
		return Fixity{}, true, err
	}
	f = Fixity{File: name, OldSum: p[2], NewSum: p[4]}
	var ok1, ok2 bool
	f.OldSize, ok1 = parseUint([]byte(p[1]))
	f.NewSize, ok2 = parseUint([]byte(p[3]))
	if !ok1 || !ok2 {
		return Fixity{}, true, fmt.Errorf("%q: sizes are not numbers", line)
	}
	for _, sum := range []string{f.OldSum, f.NewSum} {
		if err := checkSum(sum); err != nil {
			return Fixity{}, true, fmt.Errorf("%q: %v", line, err)
		}
	}
	return f, true, nil
}
