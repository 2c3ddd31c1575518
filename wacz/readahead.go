package wacz

import (
	"bufio"
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"sync/atomic"
)

// ReadBack asks a rebuild to read back what it wrote of the members
// while it waits for its requires entries and writes the metadata files,
// which come last (Rebuild.ReadBack): Check with Written then goes on
// from where that read ended, the package read back whole all the same.
type ReadBack struct {
	// PackageSHA256 takes the whole file's SHA-256 in that read, as
	// CheckOptions.PackageSHA256 does (give both).
	PackageSHA256 bool
}

// readAhead is a read back of the first end bytes of a package being
// written, everything before its metadata files: each member there read
// as Check reads it (readMember: its CRC-32 and size, and the SHA-256 of
// those the kernel copied in), and the whole file's CRC-32 (and SHA-256)
// so far. Packages written in a chain, each requiring the one before by
// its final SHA-256 (a crawl's), wait in turn for the one before to be
// written, checked and renamed: read back while it waits, a package's
// own check after the wait reads its metadata files and central
// directory alone. Nothing writes those bytes again once they are
// written (the writer only appends), so reading them earlier proves
// what reading them later would; Check compares the central directory
// it reads with the members as they were read here.
type readAhead struct {
	end     int64
	crc     uint32
	sha     []byte // the SHA-256's state (encoding.BinaryMarshaler); nil unless asked for
	members map[string]*Member
	sums    map[string][]byte // SHA-256 of the members copied in, as read
	report  *Report
	err     error // the read failed: Check reads everything
}

// readAheadRun is a readAhead being made on another goroutine.
type readAheadRun struct {
	done chan struct{}
	a    *readAhead
	// stopped ends the read at its next read of the file (abandon).
	stopped atomic.Bool
	// stat and before look at the file after the wait (lookAfterWait):
	// before is it as it was when the read began; stale says it changed
	// since, and the read is not taken on.
	stat   func() (os.FileInfo, error)
	before os.FileInfo
	stale  bool
}

// startReadAhead starts reading back the first end bytes of the file r,
// which hold members (as written, with their offsets); copied are the
// members the kernel copied in (Result.CopiedFrom); stat gives the file
// as it is, kept as it is when the read begins for lookAfterWait.
func startReadAhead(r io.ReaderAt, name string, end int64, members []*Member, copied map[string]string, withSHA bool, stat func() (os.FileInfo, error)) *readAheadRun {
	// Copies, made before the writer goes on (its central directory is
	// written from the members).
	byOffset := make([]*Member, len(members))
	for i, m := range members {
		c := *m
		byOffset[i] = &c
	}
	run := &readAheadRun{done: make(chan struct{}), stat: stat}
	// Before the read: a write after it changes the modification time
	// (where timestamps are multigrain, Linux 6.13 and later on ext4,
	// XFS, btrfs and tmpfs, a time looked at is never given to a later
	// change; elsewhere a write within the timestamp tick of the writer's
	// last one keeps it). Not known (nil), the read is dropped after the
	// wait.
	if fi, err := stat(); err == nil {
		run.before = fi
	}
	go func() {
		defer close(run.done)
		run.a = readAheadOf(&stoppable{r: r, stopped: &run.stopped}, name, end, byOffset, copied, withSHA)
	}()
	return run
}

// errReadBackStopped ends a read back its rebuild gave up (abandon).
var errReadBackStopped = errors.New("the read back was stopped: its rebuild ended without it")

// stoppable is a file read back, whose reads fail once stopped is set.
type stoppable struct {
	r       io.ReaderAt
	stopped *atomic.Bool
}

func (s *stoppable) ReadAt(p []byte, off int64) (int, error) {
	if s.stopped.Load() {
		return 0, errReadBackStopped
	}
	return s.r.ReadAt(p, off)
}

// abandon stops the read at its next read of the file and waits for it
// to end: a rebuild that fails or is cancelled while it waits for the
// packages it requires (a job stopped by the user, in a crawl's chain)
// returns within one read, not once every member it wrote was read back
// (seconds, for packages of gigabytes). Once wait has returned the read,
// it changes nothing.
func (run *readAheadRun) abandon() {
	if run == nil {
		return
	}
	run.stopped.Store(true)
	<-run.done
}

// wait waits for the read and returns it; nil if it failed or the file
// changed during the wait (lookAfterWait).
func (run *readAheadRun) wait() *readAhead {
	if run == nil {
		return nil
	}
	<-run.done
	if run.a.err != nil || run.stale {
		return nil
	}
	return run.a
}

// lookAfterWait looks at the file after the wait: if it has not the
// size and modification time it had when the read back began, the read
// is dropped (wait gives nil) and the check reads the whole file, as it
// did before there was a read back, finding whatever changed. Bytes read
// back before the wait are not read again: a change to them during the
// wait (another process writing to the new version, whose name anyone
// may list) would go unseen by the check, and the package be put in
// place with bytes other than those checked, under the CRC-32 and
// SHA-256 of those (which the log and the packages that require it
// keep). The window after the look, from the check's read to the
// rename, is the one a check made after the wait always had.
func (run *readAheadRun) lookAfterWait() {
	if run == nil {
		return
	}
	now, err := run.stat()
	if err != nil || run.before == nil || now.Size() != run.before.Size() || !now.ModTime().Equal(run.before.ModTime()) {
		run.stale = true
	}
}

// readAheadOf reads the first end bytes of r, which hold members (its
// own copies, sorted here).
func readAheadOf(r io.ReaderAt, name string, end int64, members []*Member, copied map[string]string, withSHA bool) *readAhead {
	a := &readAhead{end: end, members: map[string]*Member{}, sums: map[string][]byte{},
		report: &Report{Package: name, max: 20, kinds: map[error]int{}}}
	wholeCRC := &crcChain{}
	var whole io.Writer = wholeCRC
	var sha *asyncHash
	if withSHA {
		sha = newAsyncHash()
		whole = io.MultiWriter(wholeCRC, sha)
	}
	defer func() {
		a.crc = wholeCRC.Sum32()
		if sha != nil {
			state, err := sha.detach().(encoding.BinaryMarshaler).MarshalBinary()
			if err != nil && a.err == nil {
				a.err = err
			}
			a.sha = state
		}
	}()
	byOffset := members
	sort.Slice(byOffset, func(i, j int) bool { return byOffset[i].DataOffset < byOffset[j].DataOffset })
	p := &Package{Name: name}
	src := bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(r, 0, end), whole), 1<<20)
	crc := crc32.NewIEEE()
	buf := make([]byte, copyBufferSize)
	var pos int64
	for _, m := range byOffset {
		if m.DataOffset < pos || m.DataOffset+m.CompressedSize > end {
			a.err = fmt.Errorf("%s: %s at %d, %d bytes, is not where the read back is", name, m.Name, m.DataOffset, m.CompressedSize)
			return a
		}
		if _, err := io.CopyN(io.Discard, src, m.DataOffset-pos); err != nil {
			a.err = err
			return a
		}
		from := copied[m.Name]
		digest, err := p.readMember(a.report, nil, m, src, crc, buf, from != "", from)
		if err != nil {
			a.err = err
			return a
		}
		pos = m.DataOffset + m.CompressedSize
		a.members[m.Name] = m
		if from != "" {
			a.sums[m.Name] = digest
		}
	}
	if n, err := drain(src, buf); err != nil || pos+n != end {
		a.err = fmt.Errorf("%s: read back %d bytes of %d: %v", name, pos+n, end, err)
	}
	return a
}

// resume takes over what the read ahead found of the package p read
// back whole (Check with Written): its problems, the SHA-256 of the
// members it read that were copied in (into sums), and each of those
// members, which the central directory must give as they were written
// and read. It returns the members still to be read, from a.end on.
func (a *readAhead) resume(p *Package, r *Report, byOffset []*Member, sums map[string][]byte) []*Member {
	for _, err := range a.report.Problems {
		r.add(err)
	}
	r.Omitted += a.report.Omitted
	var rest []*Member
	seen := 0
	for _, m := range byOffset {
		if m.HeaderOffset >= a.end {
			rest = append(rest, m)
			continue
		}
		w := a.members[m.Name]
		if w == nil || !sameWritten(w, m) {
			r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "its central directory entry or local header reads back other than the member written and read back before the package's metadata (offset %d, %d bytes stored, %d bytes, CRC-32 %08x, method %d)", m.DataOffset, m.CompressedSize, m.Size, m.CRC32, m.Method))
			continue
		}
		seen++
		if s, ok := a.sums[m.Name]; ok {
			sums[m.Name] = s
		}
	}
	if seen != len(a.members) {
		r.add(errorf(p.Name, "", a.end, ErrDamaged, "%d members were written and read back before its metadata, its central directory lists %d of them there", len(a.members), seen))
	}
	return rest
}

// sameWritten reports whether the member m of a package read back is
// the member w as written.
func sameWritten(w, m *Member) bool {
	return w.Name == m.Name && w.Method == m.Method && w.CRC32 == m.CRC32 && w.Size == m.Size &&
		w.CompressedSize == m.CompressedSize && w.HeaderOffset == m.HeaderOffset && w.DataOffset == m.DataOffset
}

// aheadFor is the read ahead Check with Written goes on from: none for
// a check that compares records (the index comparison reads every WARC
// member), nor when the whole file's SHA-256 is asked for and the read
// did not take it, nor past the package's end.
func (res *Result) aheadFor(cmp *indexComparison, wholeSum bool, size int64) *readAhead {
	if res == nil || res.ahead == nil || cmp != nil {
		return nil
	}
	a := res.ahead
	if (wholeSum && a.sha == nil) || a.end > size {
		return nil
	}
	return a
}

// wholeSums are the whole file's CRC-32 and (with withSHA) SHA-256 as
// far as the read ahead read, to go on from: new ones each call, so that
// a Result can be checked twice.
func (a *readAhead) wholeSums(withSHA bool) (*crcChain, hash.Hash, error) {
	crc := &crcChain{sum: a.crc}
	if !withSHA {
		return crc, nil, nil
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(a.sha); err != nil {
		return nil, nil, err
	}
	return crc, h, nil
}
