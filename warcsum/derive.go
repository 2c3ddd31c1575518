package warcsum

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"

	"warcdedup/internal/gzfile"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
)

// ErrNotDerived wraps why a rewritten file's entry could not be derived:
// the file is then read again, as any file the cache does not know.
var ErrNotDerived = errors.New("not derived")

// stretch is a part of a new version: copied from the old one, or
// written anew in place of oldLen bytes of it.
type stretch struct {
	oldOff, oldLen int64
	newOff, newLen int64
	written        bool
}

// Derive makes the cache entry of a rewritten file's new version (r, as
// the rewrite hands it over) from the entry of its old version, reading
// only the records written anew: a record copied unchanged lists and
// counts as before, at its new offset.
//
// The caller vouches for two things: that every stretch between the
// entries was copied unchanged, checked byte for byte (refs checks the new
// version read back from disk before it renames it), and SHA256. Derive
// checks the rest: the old entry must have been made from the version
// rewritten (its stamp, change time included), its files must have the
// sums its stamp gives, its counts must add up to its Stats, the entries
// must tile both versions, each record must lie wholly in one copied
// stretch or be exactly the one written over, the
// bytes written must read as one whole record each, and the new version
// must be the one on disk, before and after its new records are read. A
// file with damage is not derived. Anything else returns an error wrapping
// ErrNotDerived, and the file is read again the next time the cache is
// asked for it.
func (c *Cache) Derive(r rewritelog.Replacement) error {
	d, err := c.newDerivation(r)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", r.Name, ErrNotDerived, err)
	}
	defer d.close()
	if err := d.run(); err != nil {
		d.w.abort()
		return fmt.Errorf("%s: %w: %v", r.Name, ErrNotDerived, err)
	}
	return nil
}

// derivation is the making of one derived entry.
type derivation struct {
	c         *Cache
	r         rewritelog.Replacement
	old       *cached
	newStamp  stamp
	stretches []stretch
	file      *os.File // the new version
	w         *entryWriter
	oldSum    Stats // what the old entry's counts add up to
	newSum    Stats
	summer    *Summer // reads the records written
	counted   []RecordCount
	buf       []byte
}

func (c *Cache) newDerivation(r rewritelog.Replacement) (*derivation, error) {
	oldStamp, ok := stampFromInfo(r.Old)
	if !ok {
		return nil, errors.New("the file system gives no stamp")
	}
	newStamp, ok := stampFromInfo(r.New)
	if !ok {
		return nil, errors.New("the file system gives no stamp")
	}
	old, ok := c.entry(r.Name, &oldStamp)
	switch {
	case !ok:
		return nil, errors.New("no entry of the version rewritten")
	case old.stamp.CountsSum == "":
		return nil, errors.New("its entry has no record counts")
	case old.stamp.Failed != "" || len(old.stamp.Messages) > 0 || old.stamp.Stats.Damaged > 0 || old.stamp.Stats.Files != 1:
		return nil, errors.New("the version rewritten was damaged")
	}
	stretches, err := stretchesOf(r, oldStamp.Size, newStamp.Size)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, err
	}
	if err := sameVersion(f, &newStamp); err != nil {
		f.Close()
		return nil, err
	}
	w := c.newEntry(Input{Path: r.Path, Name: r.Name, Size: newStamp.Size}, newStamp, nil, nil)
	if w == nil {
		f.Close()
		return nil, errors.New("cannot make the entry's files")
	}
	o := c.opt
	o.Damage, o.Warn = nil, nil
	d := &derivation{c: c, r: r, old: old, newStamp: newStamp, stretches: stretches, file: f, w: w, summer: NewSummer(o)}
	d.summer.counted = func(rc RecordCount) { d.counted = append(d.counted, rc) }
	return d, nil
}

func (d *derivation) close() { d.file.Close() }

// stretchesOf turns a rewrite's entries into the stretches of the new
// version, checking that they cover both versions, in order, without a
// gap or an overlap, and that every copied stretch keeps its length.
func stretchesOf(r rewritelog.Replacement, oldSize, newSize int64) ([]stretch, error) {
	var out []stretch
	var oldAt, newAt int64
	copied := func(oldEnd, newEnd int64) error {
		if oldEnd-oldAt != newEnd-newAt || oldEnd < oldAt {
			return fmt.Errorf("the stretch copied from %d to %d is %d bytes long in the new version", oldAt, oldEnd, newEnd-newAt)
		}
		if oldEnd > oldAt {
			out = append(out, stretch{oldOff: oldAt, oldLen: oldEnd - oldAt, newOff: newAt, newLen: newEnd - newAt})
		}
		return nil
	}
	for _, e := range r.Entries {
		if e.File != r.Name || e.Kind != rewritelog.Revisit || e.OldLength <= 0 || e.NewLength <= 0 {
			return nil, fmt.Errorf("entry of %s at %d is not a revisit written in this file", e.File, e.OldOffset)
		}
		if err := copied(e.OldOffset, e.NewOffset); err != nil {
			return nil, err
		}
		out = append(out, stretch{oldOff: e.OldOffset, oldLen: e.OldLength, newOff: e.NewOffset, newLen: e.NewLength, written: true})
		oldAt, newAt = e.OldOffset+e.OldLength, e.NewOffset+e.NewLength
	}
	if err := copied(oldSize, newSize); err != nil {
		return nil, err
	}
	return out, nil
}

// sameVersion checks that f is the version with stamp want.
func sameVersion(f *os.File, want *stamp) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	now, ok := stampFromInfo(fi)
	if !ok || !now.sameFile(want) {
		return errors.New("the new version changed since it was written")
	}
	return nil
}

// summed is an old entry's file read through its SHA-256, which must be
// the one its stamp gives: the walk reads each file once, checking it as
// it goes, where a check before it read them all twice. Nothing the walk
// makes of them is used before the sums are found right (the new entry
// is stored last).
type summed struct {
	io.Reader
	f    io.ReadCloser
	sum  hash.Hash
	want string
}

func openSummed(name, want string) (*summed, error) {
	f, err := gzfile.Open(name)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	return &summed{Reader: io.TeeReader(f, h), f: f, sum: h, want: want}, nil
}

// check reads the rest of the file and compares its sum with the stamp's.
func (s *summed) check() error {
	if _, err := io.Copy(io.Discard, s.Reader); err != nil {
		return err
	}
	if hex.EncodeToString(s.sum.Sum(nil)) != s.want {
		return errDamagedEntry
	}
	return nil
}

func (s *summed) Close() error { return s.f.Close() }

// run walks the old entry's records with the stretches, moving each
// copied record's count, line and facts line, and reading each written
// one.
func (d *derivation) run() error {
	counts, err := openSummed(d.old.counts, d.old.stamp.CountsSum)
	if err != nil {
		return err
	}
	defer counts.Close()
	lines, err := openSummed(d.old.lines, d.old.stamp.LinesSum)
	if err != nil {
		return err
	}
	defer lines.Close()
	facts, err := openSummed(d.old.facts, d.old.stamp.FactsSum)
	if err != nil {
		return err
	}
	defer facts.Close()
	cr := newCountReader(bufio.NewReader(counts))
	lr := manifest.NewReader(lines, d.old.lines)
	fr := bufio.NewScanner(facts)
	fr.Buffer(nil, 1<<20)

	si := 0 // the stretch of the record
	replaced := false
	for {
		rc, err := cr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		rc.addTo(&d.oldSum)
		for si < len(d.stretches) && rc.Offset >= d.stretches[si].oldOff+d.stretches[si].oldLen {
			if err := d.passed(si, replaced); err != nil {
				return err
			}
			si, replaced = si+1, false
		}
		if si == len(d.stretches) || rc.Offset < d.stretches[si].oldOff {
			return fmt.Errorf("the record at %d is in no stretch", rc.Offset)
		}
		s := &d.stretches[si]
		var line *manifest.Line
		var fact *Facts
		if rc.Listed {
			l, err := lr.Next()
			if err != nil || l.Offset != rc.Offset {
				return fmt.Errorf("the entry has no line of the record at %d (%v)", rc.Offset, err)
			}
			line = &l
			if !rc.Revisit {
				if fact, err = nextFact(fr, rc.Offset); err != nil {
					return err
				}
			}
		}
		if s.written {
			if rc.Offset != s.oldOff || rc.Length != s.oldLen || replaced {
				return fmt.Errorf("the record at %d (%d bytes) is not the one written over at %d (%d bytes)", rc.Offset, rc.Length, s.oldOff, s.oldLen)
			}
			replaced = true
			if err := d.readWritten(s); err != nil {
				return err
			}
			continue
		}
		if rc.Offset+rc.Length > s.oldOff+s.oldLen {
			return fmt.Errorf("the record at %d runs past the stretch copied", rc.Offset)
		}
		if err := d.move(rc, line, fact, s.newOff-s.oldOff); err != nil {
			return err
		}
	}
	for ; si < len(d.stretches); si, replaced = si+1, false {
		if err := d.passed(si, replaced); err != nil {
			return err
		}
	}
	return d.finish(lr, fr, counts, lines, facts)
}

// finish ends the walk: the old entry must have no line or facts line
// left, its files the sums its stamp gives, and its counts add up; the
// new version must still be the one on disk. Then, and only then, the
// new entry is stored.
func (d *derivation) finish(lr *manifest.Reader, fr *bufio.Scanner, files ...*summed) error {
	if _, err := lr.Next(); err != io.EOF {
		return errors.New("the entry has lines of no record")
	}
	if fr.Scan() {
		return errors.New("the entry has facts of no record")
	}
	if err := fr.Err(); err != nil {
		return err
	}
	for _, f := range files {
		if err := f.check(); err != nil {
			return err
		}
	}
	if !recordCountsEqual(&d.oldSum, &d.old.stamp.Stats) {
		return errors.New("the entry's record counts do not add up to its counts")
	}
	if err := sameVersion(d.file, &d.newStamp); err != nil {
		return err
	}
	d.newSum.Files, d.newSum.Bytes = 1, d.newStamp.Size
	return d.w.store(d.newSum, nil, d.r.SHA256)
}

// passed checks the stretch si the walk leaves: a stretch written must
// have replaced a record.
func (d *derivation) passed(si int, replaced bool) error {
	if s := &d.stretches[si]; s.written && !replaced {
		return fmt.Errorf("no record stood where the record at %d was written", s.newOff)
	}
	return nil
}

// nextFact reads the next facts line (see AppendFacts), which must be of
// the record at offset.
func nextFact(fr *bufio.Scanner, offset int64) (*Facts, error) {
	if !fr.Scan() {
		return nil, fmt.Errorf("the entry has no facts of the record at %d", offset)
	}
	line := fr.Bytes()
	fields := bytes.Fields(line)
	if len(fields) != 4 || string(fields[1]) != strconv.FormatInt(offset, 10) {
		return nil, fmt.Errorf("the entry's facts line %q is not of the record at %d", line, offset)
	}
	status, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return nil, fmt.Errorf("the entry's facts line %q: %v", line, err)
	}
	f := &Facts{Status: status, MIME: string(fields[3])}
	if f.MIME == "-" {
		f.MIME = ""
	}
	return f, nil
}

// move adds a copied record, shift bytes further on, to the new entry.
func (d *derivation) move(rc RecordCount, line *manifest.Line, fact *Facts, shift int64) error {
	rc.Offset += shift
	d.w.count(rc)
	rc.addTo(&d.newSum)
	if line == nil {
		return nil
	}
	line.Offset += shift
	d.buf = line.Append(d.buf[:0])
	if _, err := d.w.Lines().Write(d.buf); err != nil {
		return err
	}
	if fact == nil {
		return nil
	}
	d.buf = AppendFacts(d.buf[:0], line, *fact)
	_, err := d.w.Facts().Write(d.buf)
	return err
}

// readWritten lists the record written at s, read from the new version:
// one whole record, undamaged, filling the stretch.
func (d *derivation) readWritten(s *stretch) error {
	summer := d.summer
	d.counted = d.counted[:0]
	st, err := summer.SumFile(io.NewSectionReader(d.file, s.newOff, s.newLen), d.r.Name, func(l *manifest.Line) error {
		l.Offset += s.newOff
		d.buf = l.Append(d.buf[:0])
		if _, err := d.w.Lines().Write(d.buf); err != nil {
			return err
		}
		if l.IsRevisit() {
			return nil
		}
		d.buf = AppendFacts(d.buf[:0], l, summer.Facts())
		_, err := d.w.Facts().Write(d.buf)
		return err
	})
	if err != nil {
		return fmt.Errorf("the record written at %d: %w", s.newOff, err)
	}
	if st.Damaged > 0 || len(d.counted) != 1 || d.counted[0].Offset != 0 || d.counted[0].Length != s.newLen {
		return fmt.Errorf("the %d bytes written at %d do not read as one whole record", s.newLen, s.newOff)
	}
	rc := d.counted[0]
	rc.Offset = s.newOff
	d.w.count(rc)
	rc.addTo(&d.newSum)
	return nil
}

// recordCountsEqual reports whether a and b agree on what records add
// (not on files and bytes).
func recordCountsEqual(a, b *Stats) bool {
	return a.Records == b.Records && a.Listed == b.Listed && a.Revisits == b.Revisits &&
		a.RevisitsWithoutDigest == b.RevisitsWithoutDigest && a.Skipped == b.Skipped &&
		a.Damaged == b.Damaged && a.Checked == b.Checked && a.Disagreements == b.Disagreements &&
		a.PayloadBytes == b.PayloadBytes
}
