package reindex

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"warcdedup/internal/syssort"
	"warcdedup/rewritelog"
)

// An index is in urlkey order and a log's entries are in file and offset
// order, so following a log on disk (Updater.Log) is a merge join of the
// two, in three passes that hold neither in memory:
//
//  1. plan: the index's lines are read, and Update follows each record
//     with a recorder, which writes its file (as the log ranks it),
//     offset, length and number to a file;
//  2. follow: that file, sorted on file and offset by the system sort, is
//     followed through the log's runs by a rewritelog.Follower, and what
//     the follow gives each record, where it differs from the record as
//     read (its offset and length, the entries that rewrote it, an
//     error), is written to a file with the record's number; so is each
//     log entry no record landed on. A record whose first entry restored
//     it is read here, for the fields of its line (Updater.Records), in
//     file and offset order: each file opened once, read forward;
//  3. apply: the index's lines are read again, and Update follows each
//     record with the answers, sorted back on number and read in step.
//
// Update runs the same in the plan and the apply, so that both follow the
// same records in the same order; the plan's counts and learning are then
// set back.

// follower is what Update follows records through: a Moves in memory,
// the recorder of the plan, or the answers of the apply.
type follower interface {
	Resolve(name []byte) (*rewritelog.File, error)
	Follow(f *rewritelog.File, off, length int64, rewrote func(mv rewritelog.Move, off, length int64) error) (int64, int64, error)
}

// logPass is an update that follows Updater.Log.
type logPass struct {
	u          *Updater
	ctx        context.Context
	rec        *recorder
	found      *syssort.File // the answers, by record number
	unmatched  *syssort.File // entries no record landed on
	answers    *answers
	stats      Stats // the Updater's before the plan
	labelled   int8
	planFailed error // the plan stopped here: the apply must stop too
	b          []byte
}

// startLog starts the plan of an update following u.Log.
func (u *Updater) startLog(ctx context.Context) (*logPass, error) {
	lp := &logPass{u: u, ctx: ctx, stats: u.Stats, labelled: u.labelled}
	var err error
	if lp.rec, err = newRecorder(u.Log, u.Sort); err != nil {
		return nil, err
	}
	u.via = lp.rec
	return lp, nil
}

// planned ends the plan (err: why it stopped, if it did) and follows the
// records through the log; the Updater then follows the answers.
func (lp *logPass) planned(err error) error {
	lp.u.Stats, lp.u.labelled, lp.planFailed = lp.stats, lp.labelled, err
	if err := lp.follow(); err != nil {
		return err
	}
	for _, f := range lp.u.Log.Files() {
		f.Lines = 0 // Update counts them again
	}
	in, err := lp.u.Sort.Sorted(lp.ctx, lp.found)
	if err != nil {
		return err
	}
	lp.answers = &answers{log: lp.u.Log, in: in, undone: lp.entry}
	lp.u.via = lp.answers
	return nil
}

// follow follows the records planned through the log, in file and offset
// order.
func (lp *logPass) follow() error {
	u, s := lp.u, lp.u.Sort
	var err error
	if lp.found, err = s.Create("reindex-found"); err != nil {
		return err
	}
	if lp.unmatched, err = s.Create("reindex-unmatched"); err != nil {
		return err
	}
	var werr error
	var b []byte
	fw, err := u.Log.Follow(func(f *rewritelog.File, mv rewritelog.Move, landed int) {
		if landed == 1 {
			return
		}
		if err := lp.entry(f, mv, landed); err != nil && werr == nil {
			werr = err
		}
	})
	if err != nil {
		return err
	}
	defer fw.Close()
	in, err := s.Sorted(lp.ctx, lp.rec.out)
	if err != nil {
		return err
	}
	defer in.Close()
	var a answer
	for in.Next() {
		q, err := parseQuery(in.Bytes(), u.Log)
		if err != nil {
			return err
		}
		a = answer{q: q.n, hits: a.hits[:0]}
		off, length, err := fw.Follow(q.file, q.off, q.length, func(mv rewritelog.Move, off, length int64) error {
			a.hits = append(a.hits, hit{mv: mv, off: off, length: length})
			return nil
		})
		if err != nil && !isFollowError(err) {
			return err
		}
		a.off, a.length, a.err = off, length, err
		if len(a.hits) == 0 && err == nil && off == q.off && length == q.length {
			continue // the record as read
		}
		a.fields = nil
		if first := a.hits; len(first) > 0 && first[0].mv.Kind == rewritelog.Restored && u.Records != nil {
			// Its line, if a revisit the log did not write, takes the
			// restored record's fields (Update): read now, in file and
			// offset order, not in the index's.
			mime, digest, err := u.Records.Fields(q.file.Name, first[0].mv.NewOffset)
			a.fields = &recordFields{line: first[0].mv.Line, mime: mime, digest: digest}
			if err != nil {
				a.fields.err = err.Error()
			}
		}
		if err := lp.found.Line(a.append(b[:0])); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	if err := in.Close(); err != nil {
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	if c, ok := u.Records.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return err
		}
	}
	return werr
}

// The landings of the log's entries: none (unmatched), several; and in
// the apply, an entry that a record's follow landed on, but that Update
// stopped before: a rewrite of an earlier run failed (Moves.Follow then
// stops and marks none of the entries after it).
const (
	landedNone    = "0"
	landedSeveral = "2"
	landedUndone  = "9"
)

// entry notes the landings of an entry: landed of them in the follow, or
// one undone (-1) in the apply. Written ORDER LINE KIND [LANDED] MOVE.
func (lp *logPass) entry(f *rewritelog.File, mv rewritelog.Move, landed int) error {
	b := syssort.Num(lp.b[:0], int64(lp.u.Log.Order(f)))
	b = syssort.Num(append(b, ' '), mv.Line)
	switch {
	case landed == 0:
		b = append(b, " "+landedNone...)
	case landed < 0:
		b = append(b, " "+landedUndone...)
	default:
		b = appendInts(append(b, " "+landedSeveral...), int64(landed))
	}
	lp.b = appendMove(b, mv)
	return lp.unmatched.Line(lp.b)
}

// applied ends the apply: err is its error, to which the plan's is added
// if the apply did not stop where the plan did.
func (lp *logPass) applied(err error) error {
	if err == nil && lp.planFailed != nil {
		return lp.planFailed
	}
	return err
}

// eachUnmatched calls fn with each entry no record landed on, in the
// order Moves.Unmatched gives them: files in the order the log names
// them, entries in log order.
func (lp *logPass) eachUnmatched(fn func(*rewritelog.File, rewritelog.Move)) error {
	in, err := lp.u.Sort.Sorted(lp.ctx, lp.unmatched)
	if err != nil {
		return err
	}
	defer in.Close()
	var e unmatchedEntry
	for in.Next() {
		next, err := parseUnmatched(in.Bytes(), len(lp.u.Log.Files()))
		if err != nil {
			return err
		}
		if e.line != "" && next.line != e.line && e.unmatched() {
			fn(lp.u.Log.Files()[e.order], e.mv)
		}
		if next.line != e.line {
			e = next
			continue
		}
		e.undone += next.undone
	}
	if err := in.Err(); err != nil {
		return err
	}
	if e.line != "" && e.unmatched() {
		fn(lp.u.Log.Files()[e.order], e.mv)
	}
	return in.Close()
}

// unmatchedEntry is an entry's landings.
type unmatchedEntry struct {
	line           string // ORDER LINE
	order          int64
	landed, undone int
	mv             rewritelog.Move
}

func (e *unmatchedEntry) unmatched() bool { return e.undone >= e.landed }

func parseUnmatched(line []byte, files int) (unmatchedEntry, error) {
	bad := fmt.Errorf("reindex: bad unmatched line %.200q", line)
	if len(line) < 36 {
		return unmatchedEntry{}, bad
	}
	order, err := syssort.ParseNum(line[:16])
	if err != nil || int(order) >= files {
		return unmatchedEntry{}, bad
	}
	e := unmatchedEntry{line: string(line[:33]), order: order, landed: 1}
	r := &fieldReader{rest: line[34:]}
	switch string(r.field()) {
	case landedNone:
		e.landed = 0
	case landedSeveral:
		e.landed = int(r.int())
	case landedUndone:
		e.undone = 1
	default:
		return unmatchedEntry{}, bad
	}
	e.mv = r.move()
	if r.err != nil || len(r.rest) > 0 {
		return unmatchedEntry{}, bad
	}
	return e, nil
}

// close removes the pass's files.
func (lp *logPass) close() {
	if lp.answers != nil {
		lp.answers.in.Close()
	}
	lp.rec.out.Remove()
	lp.found.Remove()
	lp.unmatched.Remove()
	lp.u.via = nil
	if c, ok := lp.u.Records.(io.Closer); ok {
		c.Close()
	}
}

// recorder is the follower of the plan: it writes each record followed,
// and follows none.
type recorder struct {
	log *rewritelog.Catalog
	out *syssort.File
	n   int64
	b   []byte
}

func newRecorder(log *rewritelog.Catalog, s syssort.Sorter) (*recorder, error) {
	out, err := s.Create("reindex-records")
	if err != nil {
		return nil, err
	}
	return &recorder{log: log, out: out}, nil
}

func (r *recorder) Resolve(name []byte) (*rewritelog.File, error) { return r.log.Resolve(name) }

// Follow writes RANK OFFSET LENGTH+1 NUMBER, each of syssort.Num.
func (r *recorder) Follow(f *rewritelog.File, off, length int64, _ func(rewritelog.Move, int64, int64) error) (int64, int64, error) {
	b := syssort.Num(r.b[:0], int64(r.log.Rank(f)))
	b = syssort.Num(append(b, ' '), off)
	b = syssort.Num(append(b, ' '), length+1)
	b = syssort.Num(append(b, ' '), r.n)
	r.n++
	r.b = b
	return off, length, r.out.Line(b)
}

// query is a record to follow, as the recorder wrote it.
type query struct {
	file        *rewritelog.File
	off, length int64
	n           int64
}

func parseQuery(line []byte, log *rewritelog.Catalog) (query, error) {
	var fs [4][]byte
	var nums [4]int64
	ok := syssort.Fields(line, fs[:])
	for i := range fs {
		if !ok {
			break
		}
		var err error
		nums[i], err = syssort.ParseNum(fs[i])
		ok = err == nil
	}
	f := log.ByRank(int(nums[0]))
	if !ok || f == nil {
		return query{}, fmt.Errorf("reindex: bad record line %q", line)
	}
	return query{file: f, off: nums[1], length: nums[2] - 1, n: nums[3]}, nil
}

// answer is what the follow gave a record that it changed.
type answer struct {
	q           int64
	off, length int64
	hits        []hit
	fields      *recordFields // of the record its first hit restored, if read
	err         error         // *rewritelog.InsideError, *rewritelog.CoverError
	incomplete  bool          // the file's block of the log is cut (Catalog.Incomplete)
}

// recordFields are the index fields of a restored record read in the
// follow (Updater.Records): those of the entry on line, or the error.
type recordFields struct {
	line         int64
	mime, digest string
	err          string
}

// hit is an entry that rewrote the record, and the record's offset and
// length before it.
type hit struct {
	mv          rewritelog.Move
	off, length int64
}

// The kinds of error of an answer.
const (
	errNone       = "-"
	errIncomplete = "i" // the file's block of the log is cut: Catalog.Incomplete
	errInside     = "n" // *rewritelog.InsideError
	errCover      = "c" // *rewritelog.CoverError
)

// isFollowError tells an error of a record the log cannot follow from a
// failure of the follow itself.
func isFollowError(err error) bool {
	var ie *rewritelog.IncompleteError
	var in *rewritelog.InsideError
	var ce *rewritelog.CoverError
	return errors.As(err, &ie) || errors.As(err, &in) || errors.As(err, &ce)
}

// append writes the answer as a line:
//
//	NUMBER OFFSET LENGTH HITS [OFFSET LENGTH MOVE]... FIELDS ERROR [ERROR-FIELDS]
//
// FIELDS is "-" (none read), "f LINE MIME DIGEST" or "e LINE ERROR", the
// strings as "x" and their bytes in hex.
func (a *answer) append(b []byte) []byte {
	b = syssort.Num(b, a.q)
	b = appendInts(b, a.off, a.length, int64(len(a.hits)))
	for _, h := range a.hits {
		b = appendMove(appendInts(b, h.off, h.length), h.mv)
	}
	switch rf := a.fields; {
	case rf == nil:
		b = append(b, " -"...)
	case rf.err != "":
		b = appendHex(appendInts(append(b, " e"...), rf.line), rf.err)
	default:
		b = appendHex(appendHex(appendInts(append(b, " f"...), rf.line), rf.mime), rf.digest)
	}
	var in *rewritelog.InsideError
	var ce *rewritelog.CoverError
	switch {
	case a.err == nil:
		return append(b, " "+errNone...)
	case errors.As(a.err, &in):
		return appendMove(appendInts(append(b, " "+errInside...), in.Offset), in.Move)
	case errors.As(a.err, &ce):
		return appendMove(appendInts(append(b, " "+errCover...), ce.Offset, ce.Length), ce.Move)
	}
	return append(b, " "+errIncomplete...)
}

// appendHex writes s after a space as "x" and its bytes in hex.
func appendHex(b []byte, s string) []byte {
	return hex.AppendEncode(append(b, " x"...), []byte(s))
}

func appendInts(b []byte, ns ...int64) []byte {
	for _, n := range ns {
		b = strconv.AppendInt(append(b, ' '), n, 10)
	}
	return b
}

// appendMove writes a move's fields after a space: old and new offset and
// length, kind, run, line, payload digest ("-" for none).
func appendMove(b []byte, mv rewritelog.Move) []byte {
	b = appendInts(b, mv.OldOffset, mv.OldLength, mv.NewOffset, mv.NewLength, int64(mv.Kind), int64(mv.Run), mv.Line)
	b = append(b, ' ')
	if len(mv.PayloadDigest) == 0 {
		return append(b, '-')
	}
	return append(b, mv.PayloadDigest...)
}

// fieldReader reads the space-separated fields of a line in turn.
type fieldReader struct {
	rest []byte
	err  error
}

func (r *fieldReader) field() []byte {
	if r.err != nil {
		return nil
	}
	if len(r.rest) == 0 {
		r.err = errors.New("a field is missing")
		return nil
	}
	i := 0
	for i < len(r.rest) && r.rest[i] != ' ' {
		i++
	}
	f := r.rest[:i]
	r.rest = r.rest[min(i+1, len(r.rest)):]
	return f
}

// hex reads a field of appendHex.
func (r *fieldReader) hex() string {
	f := r.field()
	if r.err != nil {
		return ""
	}
	if len(f) == 0 || f[0] != 'x' {
		r.err = fmt.Errorf("%q is no hex field", f)
		return ""
	}
	b, err := hex.DecodeString(string(f[1:]))
	if err != nil {
		r.err = err
	}
	return string(b)
}

func (r *fieldReader) int() int64 {
	f := r.field()
	if r.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(string(f), 10, 64)
	if err != nil {
		r.err = err
	}
	return n
}

func (r *fieldReader) move() rewritelog.Move {
	mv := rewritelog.Move{OldOffset: r.int(), OldLength: r.int(), NewOffset: r.int(), NewLength: r.int(),
		Kind: rewritelog.Kind(r.int()), Run: int(r.int()), Line: r.int()}
	if d := r.field(); r.err == nil && string(d) != "-" {
		mv.PayloadDigest = []byte(string(d))
	}
	return mv
}

// parseAnswer reads an answer's line.
func parseAnswer(line []byte, a *answer) error {
	q, err := syssort.ParseNum(line[:min(16, len(line))])
	if err != nil || len(line) < 17 {
		return fmt.Errorf("reindex: bad answer line %.200q", line)
	}
	r := &fieldReader{rest: line[17:]}
	*a = answer{q: q, off: r.int(), length: r.int(), hits: a.hits[:0]}
	n := r.int()
	for range n {
		if r.err != nil {
			break
		}
		h := hit{off: r.int(), length: r.int()}
		h.mv = r.move()
		a.hits = append(a.hits, h)
	}
	switch kind := string(r.field()); kind {
	case "-":
	case "f":
		a.fields = &recordFields{line: r.int()}
		a.fields.mime, a.fields.digest = r.hex(), r.hex()
	case "e":
		a.fields = &recordFields{line: r.int()}
		a.fields.err = r.hex()
	default:
		if r.err == nil {
			r.err = fmt.Errorf("fields kind %q", kind)
		}
	}
	switch kind := string(r.field()); kind {
	case errNone:
	case errIncomplete:
		a.incomplete = true
	case errInside:
		e := &rewritelog.InsideError{Offset: r.int()}
		e.Move = r.move()
		a.err = e
	case errCover:
		e := &rewritelog.CoverError{Offset: r.int(), Length: r.int()}
		e.Move = r.move()
		a.err = e
	default:
		r.err = fmt.Errorf("error kind %q", kind)
	}
	if r.err != nil || len(r.rest) > 0 {
		return fmt.Errorf("reindex: bad answer line %.200q: %v", line, r.err)
	}
	return nil
}

// answers is the follower of the apply: it gives each record followed,
// in the order the plan numbered them, what the follow gave it.
type answers struct {
	log *rewritelog.Catalog
	in  *syssort.Lines
	// undone notes an entry the follow landed on that the apply does not
	// reach (landed -1).
	undone func(f *rewritelog.File, mv rewritelog.Move, landed int) error
	n      int64 // the next record's number
	next   answer
	held   bool // next is read and not yet given
	eof    bool
}

func (a *answers) Resolve(name []byte) (*rewritelog.File, error) { return a.log.Resolve(name) }

// prefetched returns the fields the follow read of the record that mv,
// the current record's first entry, restored; nil if it read none.
func (a *answers) prefetched(mv rewritelog.Move) *recordFields {
	if f := a.next.fields; f != nil && f.line == mv.Line {
		return f
	}
	return nil
}

// Follow gives record number a.n its answer: the entries that rewrote it
// to rewrote, in order, then its offset and length, or the error.
func (a *answers) Follow(f *rewritelog.File, off, length int64, rewrote func(rewritelog.Move, int64, int64) error) (int64, int64, error) {
	n := a.n
	a.n++
	if !a.held && !a.eof {
		if a.in.Next() {
			if err := parseAnswer(a.in.Bytes(), &a.next); err != nil {
				return off, length, err
			}
			a.held = true
		} else if err := a.in.Err(); err != nil {
			return off, length, err
		} else {
			a.eof = true
		}
	}
	if !a.held || a.next.q > n {
		return off, length, nil // the record as read
	}
	a.held = false
	if a.next.q < n {
		return off, length, fmt.Errorf("reindex: the answer of record %d comes after record %d: the index changed while it was read", a.next.q, n)
	}
	for i, h := range a.next.hits {
		if rewrote == nil {
			continue
		}
		if err := rewrote(h.mv, h.off, h.length); err != nil {
			// As Moves.Follow, which would not have followed the record
			// through the later runs.
			for _, later := range a.next.hits[i+1:] {
				if uerr := a.undone(f, later.mv, -1); uerr != nil {
					return off, length, uerr
				}
			}
			return off, length, err
		}
	}
	switch {
	case a.next.incomplete:
		return off, length, a.log.Incomplete(f.Name)
	case a.next.err != nil:
		return off, length, a.next.err
	}
	return a.next.off, a.next.length, nil
}
