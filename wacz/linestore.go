package wacz

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
	"strings"
	"syscall"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/cdx"
	"warcdedup/record"
	"warcdedup/rewritelog"
	"warcdedup/warcindex"
)

// LineStore keeps, in a directory, the warcindex lines of WARC members:
// those the hash stage made from its read of each member (Writer), and
// those of a member's rewritten copy, derived from them and the
// rewrite's entries (Derive). A rebuild's fresh index takes them
// (Rebuild.KnownLines) instead of reading and inflating every member
// again. Each file holds one member's lines in file order after a first
// line naming the member and the version of it they describe: a file of
// another version, or none, sends the rebuild back to reading the
// members.
type LineStore struct {
	Dir string
}

// The first line's tags: lines of a member as its package holds it
// (stamped with the member's stamp), and lines derived for a rewritten
// copy (stamped with that stamp and the copy's file version).
const (
	readTag    = "#warcdedup-member-lines 1"
	derivedTag = "#warcdedup-member-lines-derived 1"
)

// path is the file of member name's lines (name as the collection names
// it, "x.wacz#archive/a.warc.gz"); derived ones apart.
func (s *LineStore) path(name string, derived bool) string {
	sum := sha256.Sum256([]byte(name))
	ext := ".cdxj"
	if derived {
		ext = ".derived.cdxj"
	}
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16])+ext)
}

func header(tag, name string, stamps ...string) string {
	return strings.Join(append([]string{tag, name}, stamps...), "\t") + "\n"
}

// Writer returns a writer of member name's lines as a reader of its
// bytes at version stamp meets its records (warcsum.FileIndex): the file
// is written when it is closed whole, else removed. Any file of the
// member's is removed at once.
func (s *LineStore) Writer(name, stamp string) (*LinesWriter, error) {
	_, member, ok := SplitName(name)
	if !ok || stamp == "" || strings.ContainsAny(name+stamp, "\t\n") {
		return nil, fmt.Errorf("%s: no WACZ member name, or no stamp", name)
	}
	p := s.path(name, false)
	os.Remove(p)
	os.Remove(s.path(name, true))
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(p, 0o644)
	if err != nil {
		return nil, err
	}
	w := &LinesWriter{f: f, w: bufio.NewWriterSize(f, 256<<10)}
	w.w.WriteString(header(readTag, name, stamp))
	w.Records = warcindex.NewRecords(IndexName(member), func(e *warcindex.Entry) error {
		w.buf = append(e.AppendCDXJ(w.buf[:0]), '\n')
		_, err := w.w.Write(w.buf)
		return err
	})
	return w, nil
}

// LinesWriter writes a member's lines (LineStore.Writer).
type LinesWriter struct {
	*warcindex.Records
	f   *atomicfile.File
	w   *bufio.Writer
	buf []byte
	// Err is why the lines were not kept, once closed.
	Err error
}

// Close keeps the lines if whole (every record indexed), else drops them.
func (w *LinesWriter) Close(whole bool) {
	err := errors.New("the member was not read whole")
	if whole {
		err = w.Records.Close()
		if err == nil {
			err = w.w.Flush()
		}
		if err == nil {
			err = w.f.CommitRenamed()
		}
	}
	if err != nil {
		w.f.Abort()
		w.Err = err
	}
}

// Read returns the file of member name's lines if they are of version
// stamp, with the reader past its first line; nil if there is none of
// it.
func (s *LineStore) Read(name, stamp string) *os.File {
	return openLines(s.path(name, false), header(readTag, name, stamp))
}

// ReadDerived returns the file of the lines derived for member name's
// rewritten copy, if they are of the member at stamp, rewritten from
// the copy as copied describes it into the copy as now does.
func (s *LineStore) ReadDerived(name, stamp string, copied, now os.FileInfo) *os.File {
	from, ok := fileVersion(copied)
	if !ok {
		return nil
	}
	to, ok := fileVersion(now)
	if !ok {
		return nil
	}
	return openLines(s.path(name, true), header(derivedTag, name, stamp, from, to))
}

// ErrOtherVersion is Derive's error for a copy that is not of the
// member's version whose lines are kept: a member rewritten again (the
// collisions pass copies it from the package the first pass wrote),
// whose package's rebuild reads it.
var ErrOtherVersion = errors.New("its copy is not the version of the member whose lines are kept")

// MemberStamp is a WACZ member's identity for "nothing changed": its
// size and CRC-32 as the ZIP gives them, which a rebuild of the package
// around it keeps (the hash stage's Input.Stamp of a member).
func MemberStamp(m *Member) string {
	return fmt.Sprintf("wacz-member %d %08x", m.Size, m.CRC32)
}

// stampSize is the member's size a MemberStamp gives.
func stampSize(stamp string) (int64, bool) {
	var size int64
	var crc uint32
	n, err := fmt.Sscanf(stamp, "wacz-member %d %x", &size, &crc)
	return size, err == nil && n == 2
}

// openLines opens the file p if its first line is want, positioned after
// it.
func openLines(p, want string) *os.File {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	first := make([]byte, len(want))
	if _, err := io.ReadFull(f, first); err != nil || string(first) != want {
		f.Close()
		return nil
	}
	return f
}

// fileVersion names a version of a file: its device and inode, size
// and modification time ("" when the file system gives no inode).
func fileVersion(fi os.FileInfo) (string, bool) {
	if fi == nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()), true
}

// Derive writes the lines of the rewritten copy of a member (rp, as the
// rewrite hands it over, rp.Name the member's name in the collection):
// the member's lines at version stamp, brought up to date with rp's
// entries as a package's own index is (LogUpdate): offsets moved,
// records made revisits re-described. The copy rewritten must be the
// member's bytes at that version (the caller's word: the rebuild checks
// that the copy was made from the package as it is then, and that rp.Old
// is the copy as made). Without the
// member's lines of that version, or when an entry finds no line,
// nothing is written and the rebuild reads the copy.
func (s *LineStore) Derive(rp rewritelog.Replacement, stamp string) (err error) {
	_, member, ok := SplitName(rp.Name)
	if !ok {
		return fmt.Errorf("%s: no WACZ member", rp.Name)
	}
	dp := s.path(rp.Name, true)
	os.Remove(dp)
	oldVersion, ok := fileVersion(rp.Old)
	newVersion, ok2 := fileVersion(rp.New)
	if !ok || !ok2 {
		return fmt.Errorf("%s: the file system gives no version of its copy", rp.Name)
	}
	// The collisions pass copies the members the first pass rewrote from
	// the packages it wrote anew: their entries do not apply to the lines
	// of the member the hash read (smaller by every revisit written).
	if size, ok := stampSize(stamp); !ok || size != rp.Old.Size() {
		return fmt.Errorf("%s: %w", rp.Name, ErrOtherVersion)
	}
	in := s.Read(rp.Name, stamp)
	if in == nil {
		return fmt.Errorf("%s: no lines of the version rewritten", rp.Name)
	}
	defer in.Close()
	moves, err := entryMoves(rp.Entries, IndexName(member))
	if err != nil {
		return err
	}
	out, err := atomicfile.Create(dp, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	rewritten, err := newRewrittenRecords(rp, IndexName(member))
	if err != nil {
		return err
	}
	defer rewritten.f.Close()
	w := bufio.NewWriterSize(out, 256<<10)
	w.WriteString(header(derivedTag, rp.Name, stamp, oldVersion, newVersion))
	if err := updateLines(in, rp.Name, moves, rewritten, w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The copy must still be the version the entries lead to.
	if fi, err := os.Stat(rp.Path); err != nil || !sameFileVersion(fi, newVersion) {
		return fmt.Errorf("%s: its copy changed while its lines were derived", rp.Name)
	}
	return out.CommitRenamed()
}

func sameFileVersion(fi os.FileInfo, v string) bool {
	w, ok := fileVersion(fi)
	return ok && w == v
}

// entryMoves are the rewrite's entries as Moves of the file the index
// lines name file.
func entryMoves(entries []rewritelog.Entry, file string) (*rewritelog.Moves, error) {
	var buf bytes.Buffer
	buf.Write(rewritelog.AppendRun(nil, time.Unix(0, 0)))
	buf.WriteByte('\n')
	for _, e := range entries {
		e.File = file
		buf.Write(e.AppendTo(nil))
		buf.WriteByte('\n')
	}
	return rewritelog.Load(rewritelog.NewReader(&buf, file+" (its rewrite's entries)"), time.Time{})
}

// rewrittenRecords are the records a copy's rewrite wrote, whose lines
// are checked against warcindex's of the records (check) in what a
// LogUpdate changes: it moves a line's length by the difference of the
// whole records' lengths, which in an uncompressed member is off when
// the revisit's line ends (CR LF CR LF) are not those of the response
// it replaced (warcindex's length has none), and it spells the revisit's
// digest as the member's other lines do, which need not be warcindex's
// spelling of the revisit's WARC-Payload-Digest.
type rewrittenRecords struct {
	f    *os.File
	file string          // as the lines name it
	at   map[int64]int64 // the entries' new offsets and lengths
	// rr reads each record: one Reader for all, whose buffers of a few
	// hundred kB would cost more than a revisit's bytes.
	rr *record.Reader
}

func newRewrittenRecords(rp rewritelog.Replacement, file string) (*rewrittenRecords, error) {
	f, err := os.Open(rp.Path)
	if err != nil {
		return nil, err
	}
	c := &rewrittenRecords{f: f, file: file, at: map[int64]int64{}}
	for _, e := range rp.Entries {
		c.at[e.NewOffset] = e.NewLength
	}
	return c, nil
}

// check returns an error if l is the line of a record the rewrite wrote
// and its length, media type, status or digest is not warcindex's of
// that record (the rest of a line, its key, the record's neighbours
// make, which a rewrite does not change).
func (c *rewrittenRecords) check(l *cdx.Line, name string) error {
	n, ok := c.at[l.Offset]
	if !ok {
		return nil
	}
	e, err := c.index(l.Offset, n)
	switch {
	case err != nil:
		return fmt.Errorf("%s: offset %d: the record rewritten there cannot be indexed: %w", name, l.Offset, err)
	case e == nil:
		return fmt.Errorf("%s: offset %d: warcindex gives the record rewritten there no line", name, l.Offset)
	}
	same := func(v []byte, has bool, want string) bool { return (v != nil) == has && string(v) == want }
	var differ []string
	if e.Length != l.Length {
		differ = append(differ, fmt.Sprintf("length %d, warcindex's %d", l.Length, e.Length))
	}
	for _, f := range []struct {
		field string
		v     []byte
		has   bool
		want  string
	}{{"mime", l.MIME, e.HasMime, e.Mime}, {"status", l.Status, e.HasStatus, e.Status}, {"digest", l.Digest, e.HasDigest, e.Digest}} {
		if !same(f.v, f.has, f.want) {
			differ = append(differ, fmt.Sprintf("%s %q, warcindex's %q", f.field, f.v, f.want))
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("%s: offset %d: the line of the record rewritten there is not warcindex's of it: %s", name, l.Offset, strings.Join(differ, "; "))
	}
	return nil
}

// index is warcindex's entry of the record at off, n bytes long.
func (c *rewrittenRecords) index(off, n int64) (*warcindex.Entry, error) {
	rr, err := record.Reuse(c.rr, io.NewSectionReader(c.f, off, n), c.file)
	if err != nil {
		return nil, err
	}
	c.rr = rr
	rec, err := rr.Next()
	if err != nil {
		return nil, err
	}
	var e *warcindex.Entry
	ix := warcindex.NewRecords(c.file, func(got *warcindex.Entry) error {
		e = got
		return nil
	})
	if err := ix.Begin(rr, rec, nil); err != nil {
		return nil, err
	}
	if err := rr.Finish(); err != nil {
		return nil, err
	}
	if err := ix.End(rr, rec); err != nil {
		return nil, err
	}
	if err := ix.Close(); err != nil {
		return nil, err
	}
	return e, nil
}

// updateLines writes the lines of in updated through moves to w; every
// move must find its line, and the lines of the records rewritten be
// warcindex's (rewritten.check).
func updateLines(in io.Reader, name string, moves *rewritelog.Moves, rewritten *rewrittenRecords, w io.Writer) error {
	r, err := cdx.NewReader(in, name, cdx.Options{Format: cdx.CDXJ})
	if err != nil {
		return err
	}
	u := NewLogUpdate(moves)
	var buf []byte
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if l.Kind != cdx.Record {
			return fmt.Errorf("%s: line %d: not a record's line", name, l.Number)
		}
		changed, err := u.Update(l, name)
		if err != nil {
			return err
		}
		if changed {
			if err := rewritten.check(l, name); err != nil {
				return err
			}
		}
		buf = append(l.AppendTo(buf[:0]), '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return u.finish(name)
}
