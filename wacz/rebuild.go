package wacz

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"warcdedup/cdx"
	"warcdedup/warcindex"
)

// Replacement is the new content of a WARC member, in a file (written
// by the rewrite beside the package).
type Replacement struct {
	Path string
	// Sum, if set, is the file's size, CRC-32 and SHA-256 as a read of it
	// whole took them: the rewrite's check of the new version it wrote
	// (inplace: every byte compared with the old version or read back as
	// the record written), of the file as it still is. With KnownLines
	// (the index reads no member), the rebuild takes them rather than
	// reading the file again for them before its copy; a file changed
	// since is found as one changed between that read and the copy is: a
	// copy by the kernel has its SHA-256 taken again by the check of what
	// was written (Result.CopiedFrom), a copy here its CRC-32 and size.
	Sum *FileSum
}

// FileSum is a file's size, CRC-32 and SHA-256, of one read of it.
type FileSum struct {
	Size   int64
	CRC32  uint32
	SHA256 []byte
}

// Metadata is a package's datapackage.json and datapackage-digest.json
// as they were (Digest nil when it had none), kept to be put back.
type Metadata struct {
	Datapackage, Digest []byte
}

// Rebuild writes a new version of a package: some WARC members replaced,
// every other member copied byte for byte (its compressed bytes as
// stored), in the same order, with the same names, times, attributes and
// extra fields; the index rebuilt in the form it had; datapackage.json
// with the new members' SHA-256 and sizes and "modified", everything
// else in it kept; datapackage-digest.json with the new datapackage's
// SHA-256. WARC members are stored; a rebuilt member keeps its method.
type Rebuild struct {
	// Source is the package as it is. Check it first: a rebuild trusts
	// the members it copies, and datapackage.json's entries for them.
	Source *Package
	// Replace maps WARC member names ("archive/data.warc.gz") to their
	// new content.
	Replace map[string]Replacement
	// Index brings the index's lines up to date with the replacements
	// (a *LogUpdate of the rewrite log's entries); every line keeps the
	// spelling of the indexer that wrote it. With FreshIndex instead, the
	// index is written anew from the WARC members with package
	// warcindex (warcio.js's lines), in the same form. One of them is
	// needed when members are replaced.
	Index      IndexUpdate
	FreshIndex bool
	// KnownLines, if set, gives with FreshIndex the lines warcindex
	// writes of a WARC member (by name) as the new package holds it, in
	// file order, the file positioned at the first (a LineStore's:
	// Read, ReadDerived), nil when it has none. When it gives every WARC
	// member's, the fresh index is made from them instead of from the
	// members, read and inflated once more; the rebuild closes them.
	KnownLines func(member string) *os.File
	// Now is the time of the rebuild ("modified", the new members'
	// times); the zero time means time.Now.
	Now time.Time
	// DropSignature allows the rebuild of a signed package: its signature
	// is removed from datapackage-digest.json and recorded in
	// datapackage.json (RemovedSignaturesKey). Without it a signed package
	// is refused (ErrSigned).
	DropSignature *SignatureRemoval
	// Require and Unrequire edit relation.requires (Datapackage.Require,
	// Unrequire).
	Require   []Requirement
	Unrequire []string
	// Requires, if set, gives more requires entries (after Require's),
	// called once, when every member but the metadata files is written:
	// a package written beside the packages it requires waits there for
	// their final hash, the bulk of its work done meanwhile.
	Requires func() ([]Requirement, error)
	// Metadata, if set, is written as datapackage.json and
	// datapackage-digest.json byte for byte instead of the edited ones,
	// provided every member it lists is written with the SHA-256 and size
	// it gives (an undo that gave every member back bit for bit gets its
	// signature back); otherwise the rebuild fails with ErrHash.
	Metadata *Metadata
	// TempDir holds the rebuilt index while the package is written (""
	// is the system's).
	TempDir string
	// SortMemory bounds the index lines a fresh index sorts in memory
	// (beyond, through TempDir and the system sort); 0 is 64 MiB.
	// Rebuilds at once share a process's budget.
	SortMemory int
	// NoPackageSHA256 leaves out the whole file's SHA-256 (Result.SHA256
	// nil): a second SHA-256 of every byte beside the new members' own,
	// which only a package that another requires by hash needs (its
	// requires entry), and whoever needs it can take by reading the file
	// (the check of what was written can: CheckOptions.PackageSHA256).
	// Without it, a package written to an *os.File has its replaced
	// members copied in by the kernel (Result.CopiedFrom), which only
	// that check proves to be the bytes read for their sums.
	NoPackageSHA256 bool
	// Times, if set, gives members written anew (by name) their MS-DOS
	// time and date instead of Now's: an undo that puts Metadata back
	// puts back the times the members had with it.
	Times map[string][2]uint16

	// FlushBeforeWait has Write flush the members it wrote to disk (out's
	// Sync, where out has one) before it calls Requires: the sync that
	// must come before the new package's rename then has only the
	// metadata files and the central directory left to write. Packages
	// written in a chain, each renamed only after the one it requires
	// (a crawl's), each wait for little more than those at their turn,
	// the members of the next being flushed while it waits. A failed
	// flush fails the Write, whatever a later sync says: Linux reports a
	// writeback error once to each open file, so that a second sync of
	// the same open file may succeed with the members' bytes lost.
	FlushBeforeWait bool

	// ReadBack, if set, has Write read back the members it wrote while
	// Requires waits and the metadata files are written (readAhead):
	// the check of what was written (Check with Written: the Result)
	// then reads the metadata files and the central directory after
	// it, the rest having been read.
	ReadBack *ReadBack

	// beforeCopy, if set, is called with a replaced member's name
	// between the read of its file for its size and sums and its copy
	// into the package (tests: a file that changes there).
	beforeCopy func(member string)
}

// timeOf is the MS-DOS time and date of the member name written anew.
func (w *rebuildWrite) timeOf(name string) (uint16, uint16) {
	if t, ok := w.Times[name]; ok {
		return t[0], t[1]
	}
	return w.mtime, w.mdate
}

// Result is what a rebuild wrote.
type Result struct {
	// Members are the members written, with their offsets in the new
	// package.
	Members []*Member
	// Datapackage and Digest are the metadata files written (Digest nil
	// when the package has none).
	Datapackage, Digest []byte
	// Size is the new package's size, SHA256 (nil with NoPackageSHA256)
	// and CRC32 its file's, as written (a check that reads it back finds
	// the same CRC-32).
	Size   int64
	SHA256 []byte
	CRC32  uint32
	// Lines counts the index lines written, Changed those the update
	// changed.
	Lines, Changed int64
	// MemberSHA256 is each member's SHA-256 as written, by name: taken
	// from the bytes written for the members written anew, datapackage.json's
	// of the source (checked before the rebuild) for those copied byte
	// for byte. A check of the new package compares datapackage.json
	// with it (CheckOptions.Written).
	MemberSHA256 map[string][]byte
	// RemovedSignature is set when a signature was dropped.
	RemovedSignature bool
	// MetadataRestored is set when Metadata was written.
	MetadataRestored bool
	// IndexedMembers is set when a fresh index read the WARC members,
	// their lines not all known (KnownLines).
	IndexedMembers bool
	// CopiedFrom names, by member, the files (replacements, indexes
	// rebuilt and stored) whose bytes the kernel copied into the package
	// (out a file, NoPackageSHA256): their size, CRC-32 and SHA-256 are
	// those of a read before the copy, and only a check of what was
	// written (Check with Written) proves that the bytes copied are those
	// read: a member that reads back without the CRC-32 its headers give,
	// or the SHA-256 (taken again, a CRC-32 being easily kept by a
	// change), is its file changed between the two.
	CopiedFrom map[string]string

	// ahead is the read back of the members made while the rebuild
	// waited (Rebuild.ReadBack), which Check goes on from; nil if none
	// was made or it failed.
	ahead *readAhead
}

// prepared is a member's new content in a file: stored, or deflated
// with its CRC-32 and sizes known.
type prepared struct {
	path        string
	size, csize int64
	crc         uint32
	sum         []byte
	deflated    bool
}

// Write writes the new package to out from its start. out is a file
// created for it (the rename over the old package, after Check, is the
// caller's); on error its content is to be discarded.
func (b *Rebuild) Write(out outFile) (*Result, error) {
	src := b.Source
	if src.Signed() && b.DropSignature == nil {
		return nil, errorf(src.Name, DigestName, -1, ErrSigned, "a rewrite invalidates the signature in datapackage-digest.json (signedData); the signature must be removed to go on")
	}
	w := &rebuildWrite{Rebuild: b, now: b.Now, files: map[string]*os.File{}, rebuilt: map[string]*prepared{},
		written: map[string]memberSum{}, res: &Result{}}
	if w.now.IsZero() {
		w.now = time.Now()
	}
	w.mtime, w.mdate = msdosTime(w.now)
	defer w.cleanup()
	if err := w.openReplacements(); err != nil {
		return nil, err
	}
	w.zw = newZipWriter(out, !b.NoPackageSHA256)
	defer w.zw.sums()
	// Copied by the kernel, a replacement's SHA-256 is taken by the
	// read that takes its size and CRC-32 (sumReplacements, or the
	// fresh index's, or storeFile's).
	w.kernel = w.zw.copyInKernel(out)
	w.zw.beforeCopy = b.beforeCopy
	indexed := w.startIndex()
	w.waitIndex = func() error {
		if indexed != nil {
			w.indexErr, indexed = <-indexed, nil
		}
		return w.indexErr
	}
	defer w.waitIndex() // before cleanup removes its files
	if err := w.waitIndexUnlessFresh(); err != nil {
		return nil, err
	}
	if err := w.writeMembers(); err != nil {
		return nil, err
	}
	if err := w.waitIndex(); err != nil {
		return nil, err
	}
	ahead, err := w.startReadBack(out)
	if err != nil {
		return nil, err
	}
	// The file is not read after Write returns; a Write that fails (its
	// wait for the packages it requires cancelled) stops the read first.
	defer ahead.abandon()
	if err := w.flushBeforeWait(out); err != nil {
		return nil, err
	}
	w.require = b.Require
	if b.Requires != nil {
		more, err := b.Requires()
		if err != nil {
			return nil, err
		}
		w.require = append(slices.Clone(b.Require), more...)
	}
	ahead.lookAfterWait()
	if err := w.writeMetadata(); err != nil {
		return nil, err
	}
	if err := w.zw.close(src.Comment); err != nil {
		return nil, err
	}
	w.res.Size = w.zw.off
	w.res.SHA256, w.res.CRC32 = w.zw.sums()
	w.res.MemberSHA256 = map[string][]byte{}
	if rs, err := src.Datapackage.Resources(); err == nil {
		for _, r := range rs {
			w.res.MemberSHA256[r.Path] = r.SHA256
		}
	}
	for name, ws := range w.written {
		w.res.MemberSHA256[name] = ws.sum
	}
	w.res.ahead = ahead.wait()
	return w.res, nil
}

// flushBeforeWait flushes what was written so far to disk, when asked
// (FlushBeforeWait) and out can be synced.
func (w *rebuildWrite) flushBeforeWait(out outFile) error {
	s, ok := out.(interface{ Sync() error })
	if !w.FlushBeforeWait || !ok {
		return nil
	}
	if err := w.zw.w.Flush(); err != nil {
		return err
	}
	if err := s.Sync(); err != nil {
		return fmt.Errorf("%s (new version): flushing its members to disk: %w", w.Source.Name, err)
	}
	return nil
}

// startReadBack starts the read back of what was written so far, every
// member but the metadata files (ReadBack), on another goroutine; nil
// if not asked for, or out cannot be read.
func (w *rebuildWrite) startReadBack(out outFile) (*readAheadRun, error) {
	ra, ok := out.(io.ReaderAt)
	// The file is looked at after the wait (lookAfterWait): none if it
	// cannot be.
	st, statable := out.(interface{ Stat() (os.FileInfo, error) })
	if w.ReadBack == nil || !ok || !statable {
		return nil, nil
	}
	if err := w.zw.w.Flush(); err != nil {
		return nil, err
	}
	copied := make(map[string]string, len(w.res.CopiedFrom))
	for m, from := range w.res.CopiedFrom {
		copied[m] = from
	}
	return startReadAhead(ra, w.Source.Name+" (new version)", w.zw.off, w.res.Members, copied, w.ReadBack.PackageSHA256, st.Stat), nil
}

// startIndex starts the new package's index and returns the channel
// its outcome comes on. A fresh index reads the new members as their
// copy into the package reads them (each at its own offsets): it is made
// on another core while the WARC members are written, which come first in
// a package as Browsertrix and py-wacz write it; the first other member
// waits for it. An index updated from the log is made first.
func (w *rebuildWrite) startIndex() chan error {
	indexed := make(chan error, 1)
	if !w.FreshIndex {
		indexed <- w.rebuildIndexes()
		return indexed
	}
	w.known = w.knownLines()
	w.raw = map[string]chan rawSum{}
	for name := range w.files {
		w.raw[name] = make(chan rawSum, 1)
	}
	if w.known != nil {
		// The index reads nothing but the lines. The replacements are
		// read for their size and CRC-32 on another core, each ahead of
		// its copy into the package (as a fresh index read them),
		// unless their sums are given (Replacement.Sum).
		go w.sumReplacements()
		go func() { indexed <- w.rebuildIndexes() }()
		return indexed
	}
	go func() {
		indexed <- w.rebuildIndexes()
		// A member the index did not read whole is read for its CRC-32
		// by its copy (storeFile).
		for _, c := range w.raw {
			close(c)
		}
	}()
	return indexed
}

// memberSum is a member written anew: its SHA-256 and size.
type memberSum struct {
	sum  []byte
	size int64
}

// rebuildWrite is one Write of a Rebuild.
type rebuildWrite struct {
	*Rebuild
	now          time.Time
	mtime, mdate uint16
	files        map[string]*os.File // the replacements, by member name
	temps        []string            // files to remove at the end
	rebuilt      map[string]*prepared
	written      map[string]memberSum
	zw           *zipWriter
	res          *Result
	// kernel: the replacements are copied by the kernel
	// (zipWriter.copyInKernel), each read before for its SHA-256 too.
	kernel bool
	// require are the requires entries written: Require's and
	// Requires'.
	require []Requirement
	// waitIndex waits for the indexes' rebuild (rebuildIndexes), once,
	// and returns its error.
	waitIndex func() error
	indexErr  error
	// raw gets, with a fresh index, the size and CRC-32 of each
	// replacement's bytes as the index read them (once; closed when the
	// index is done): its copy into the package needs them for the
	// local header, and need not read the file for them first.
	raw map[string]chan rawSum
	// known are the lines of every WARC member, with a fresh index from
	// KnownLines; nil when some member's are not known.
	known map[string]knownLines
}

// sumReplacements reads each replacement, in the order of the members,
// for the size and CRC-32 its copy into the package writes before its
// bytes (storeRead), and its SHA-256 when the kernel copies them; one
// it could not read is read by the copy itself (storeFile). One whose
// sums are given (Replacement.Sum) is not read.
func (w *rebuildWrite) sumReplacements() {
	defer func() {
		for _, c := range w.raw {
			close(c)
		}
	}()
	buf := make([]byte, copyBufferSize)
	for _, m := range w.Source.WARCs() {
		f := w.files[m.Name]
		if f == nil {
			continue
		}
		if s := w.Replace[m.Name].Sum; s != nil && len(s.SHA256) == sha256.Size {
			w.raw[m.Name] <- rawSum{size: s.Size, crc: s.CRC32, sha256: s.SHA256}
			continue
		}
		raw := newRawSummer(w.kernel)
		if _, err := io.CopyBuffer(raw, io.NewSectionReader(f, 0, 1<<62), buf); err != nil {
			return
		}
		w.raw[m.Name] <- raw.sum()
	}
}

// knownLines is a member's lines: the file, from start.
type knownLines struct {
	f     *os.File
	start int64
}

// knownLines takes KnownLines' files of every WARC member, or none.
func (w *rebuildWrite) knownLines() map[string]knownLines {
	if w.KnownLines == nil {
		return nil
	}
	known := map[string]knownLines{}
	for _, m := range w.Source.WARCs() {
		f := w.KnownLines(m.Name)
		if f == nil {
			for _, k := range known {
				k.f.Close()
			}
			return nil
		}
		start, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			f.Close()
			for _, k := range known {
				k.f.Close()
			}
			return nil
		}
		known[m.Name] = knownLines{f: f, start: start}
	}
	return known
}

// indexed passes on the size and CRC-32 of the replacement name as its
// fresh index read it, the first time (a package with two indexes
// indexes its members twice).
func (w *rebuildWrite) indexed(name string, rs rawSum) {
	select {
	case w.raw[name] <- rs:
	default:
	}
}

// storeReplacement writes the replacement f as the stored member m,
// returning its SHA-256: with the size and CRC-32 its fresh index read
// it with when it has them (storeRead), else read first (storeFile).
func (w *rebuildWrite) storeReplacement(m *Member, f *os.File) ([]byte, error) {
	w.copiedFrom(m.Name, f.Name())
	if c := w.raw[m.Name]; c != nil {
		if rs, ok := <-c; ok {
			if w.beforeCopy != nil {
				w.beforeCopy(m.Name)
			}
			return w.zw.storeRead(m, f, rs)
		}
	}
	return w.zw.storeFile(m, f)
}

// copiedFrom notes, when the kernel copies stored files in, that the
// member's bytes are copied from the file path (Result.CopiedFrom): a
// replacement, or a rebuilt index stored.
func (w *rebuildWrite) copiedFrom(member, path string) {
	if !w.kernel {
		return
	}
	if w.res.CopiedFrom == nil {
		w.res.CopiedFrom = map[string]string{}
	}
	w.res.CopiedFrom[member] = path
}

// waitIndexUnlessFresh waits for an index updated from the log, made
// before anything is written.
func (w *rebuildWrite) waitIndexUnlessFresh() error {
	if w.FreshIndex {
		return nil
	}
	return w.waitIndex()
}

func (w *rebuildWrite) cleanup() {
	for _, f := range w.files {
		f.Close()
	}
	for _, k := range w.known {
		k.f.Close()
	}
	for _, t := range w.temps {
		os.Remove(t)
	}
}

// openReplacements opens the new WARC members, and gives a LogUpdate
// them to read restored records from.
func (w *rebuildWrite) openReplacements() error {
	byIndexName := map[string]*os.File{}
	for name, r := range w.Replace {
		m := w.Source.Member(name)
		if m == nil || !m.IsArchive() {
			return fmt.Errorf("%s: %s is no WARC member of the package", w.Source.Name, name)
		}
		f, err := os.Open(r.Path)
		if err != nil {
			return err
		}
		w.files[name] = f
		byIndexName[IndexName(name)] = f
	}
	if lu, ok := w.Index.(*LogUpdate); ok && lu.Records == nil {
		lu.Records = &memberRecords{files: byIndexName}
	}
	return nil
}

// rebuildIndexes writes the new indexes to temporary files, when members
// are replaced or a fresh index is asked for.
func (w *rebuildWrite) rebuildIndexes() error {
	if len(w.Replace) == 0 && !w.FreshIndex {
		return nil
	}
	if w.Index == nil && !w.FreshIndex {
		return fmt.Errorf("%s: %w", w.Source.Name, errNoUpdate)
	}
	indexes, err := w.Source.Indexes()
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		if err := w.rebuildIndex(ix); err != nil {
			return err
		}
	}
	if lu, ok := w.Index.(*LogUpdate); ok && !w.FreshIndex {
		return lu.finish(w.Source.Name)
	}
	return nil
}

// writeMembers writes every member but the metadata files, in order:
// replaced WARC members stored, rebuilt indexes, the others copied.
func (w *rebuildWrite) writeMembers() error {
	src, zw := w.Source, w.zw
	for _, sm := range src.Members {
		if sm.Name == DatapackageName || sm.Name == DigestName {
			continue
		}
		m := cloneMember(sm)
		f := w.files[sm.Name]
		var p *prepared
		if f == nil && !sm.IsArchive() {
			// The rebuilt indexes are in w.rebuilt once done.
			if err := w.waitIndex(); err != nil {
				return err
			}
			p = w.rebuilt[sm.Name]
		}
		switch {
		case f != nil:
			m.ModifiedTime, m.ModifiedDate = w.timeOf(m.Name)
			sum, err := w.storeReplacement(m, f)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", src.Name, sm.Name, err)
			}
			w.written[m.Name] = memberSum{sum, m.Size}
		case p != nil:
			m.ModifiedTime, m.ModifiedDate = w.timeOf(m.Name)
			f, err := os.Open(p.path)
			if err != nil {
				return err
			}
			if p.deflated {
				m.Size, m.CompressedSize, m.CRC32, m.Method = p.size, p.csize, p.crc, Deflate
				if err = zw.begin(m); err == nil {
					err = zw.copyData(m, f)
				}
			} else {
				w.copiedFrom(m.Name, p.path)
				p.sum, err = zw.storeFile(m, f)
			}
			f.Close()
			if err != nil {
				return err
			}
			w.written[m.Name] = memberSum{p.sum, p.size}
		default:
			if err := zw.copyMember(m, src.Raw(sm)); err != nil {
				return fmt.Errorf("%s: %s: %w", src.Name, sm.Name, err)
			}
		}
		w.res.Members = append(w.res.Members, m)
	}
	return nil
}

// writeMetadata writes datapackage.json and datapackage-digest.json,
// after every member they describe: the old ones with the new members'
// hashes and the edits asked for, or Metadata's.
func (w *rebuildWrite) writeMetadata() error {
	src, res := w.Source, w.res
	var dpBytes, digestBytes []byte
	if w.Metadata != nil {
		if err := w.checkMetadata(w.written); err != nil {
			return err
		}
		dpBytes, digestBytes = w.Metadata.Datapackage, w.Metadata.Digest
		res.MetadataRestored = true
	} else {
		dp := src.Datapackage.Clone()
		rs, err := dp.Resources()
		if err != nil {
			return err
		}
		for _, r := range rs {
			if ws, ok := w.written[r.Path]; ok {
				if err := dp.setResource(r.Path, ws.sum, ws.size); err != nil {
					return err
				}
			}
		}
		dp.SetModified(w.now)
		for _, f := range w.Unrequire {
			dp.Unrequire(f)
		}
		for _, r := range w.require {
			if err := dp.Require(r); err != nil {
				return err
			}
		}
		drop := src.Signed()
		if drop {
			dp.recordRemoval(src.Digest.signedData().clone(), src.Digest.Hash, *w.DropSignature)
			res.RemovedSignature = true
		}
		dpBytes = dp.Bytes()
		if src.Digest != nil {
			sum := sha256.Sum256(dpBytes)
			digestBytes = src.Digest.withHash(sum[:], drop)
		}
	}
	for _, meta := range []struct {
		name string
		data []byte
	}{{DatapackageName, dpBytes}, {DigestName, digestBytes}} {
		if meta.data == nil {
			continue
		}
		m := &Member{Name: meta.name, Method: Store, CreatorVersion: 20, ReaderVersion: 20}
		if sm := src.Member(meta.name); sm != nil {
			m = cloneMember(sm)
		}
		m.ModifiedTime, m.ModifiedDate = w.timeOf(m.Name)
		if err := w.zw.writeBytes(m, meta.data); err != nil {
			return err
		}
		res.Members = append(res.Members, m)
	}
	res.Datapackage, res.Digest = dpBytes, digestBytes
	return nil
}

// checkMetadata checks that Metadata's datapackage.json lists every
// member written anew with the SHA-256 and size written, and that its
// digest file is of it.
func (b *Rebuild) checkMetadata(written map[string]memberSum) error {
	pkg := b.Source.Name
	dp, err := ParseDatapackage(b.Metadata.Datapackage)
	if err != nil {
		return &Error{Package: pkg, Member: DatapackageName, Offset: -1, Err: err}
	}
	rs, err := dp.Resources()
	if err != nil {
		return err
	}
	for _, r := range rs {
		w, ok := written[r.Path]
		if !ok {
			continue
		}
		if !bytes.Equal(r.SHA256, w.sum) || r.Bytes != w.size {
			return errorf(pkg, r.Path, -1, ErrHash, "the datapackage.json to put back gives %s, %d bytes; the member written is sha256:%x, %d bytes", r.Hash, r.Bytes, w.sum, w.size)
		}
	}
	if (b.Metadata.Digest == nil) != (b.Source.Member(DigestName) == nil) {
		return errorf(pkg, DigestName, -1, ErrDigestFile, "the metadata to put back and the package disagree on whether there is one")
	}
	if b.Metadata.Digest != nil {
		df, err := ParseDigestFile(b.Metadata.Digest)
		if err != nil {
			return &Error{Package: pkg, Member: DigestName, Offset: -1, Err: err}
		}
		if sum := sha256.Sum256(b.Metadata.Datapackage); !bytes.Equal(df.SHA256, sum[:]) {
			return errorf(pkg, DigestName, -1, ErrHash, "the digest file to put back is not of the datapackage.json to put back")
		}
	}
	return nil
}

// writeBytes writes a member from memory, stored or deflated as m says.
func (z *zipWriter) writeBytes(m *Member, data []byte) error {
	if m.Method == Deflate {
		var c bytes.Buffer
		fw, _ := flate.NewWriter(&c, flate.DefaultCompression)
		fw.Write(data)
		fw.Close()
		m.Size, m.CompressedSize, m.CRC32 = int64(len(data)), int64(c.Len()), crc32.ChecksumIEEE(data)
		if err := z.begin(m); err != nil {
			return err
		}
		return z.copyData(m, &c)
	}
	m.Method = Store
	m.Size, m.CompressedSize, m.CRC32 = int64(len(data)), int64(len(data)), crc32.ChecksumIEEE(data)
	if err := z.begin(m); err != nil {
		return err
	}
	return z.copyData(m, bytes.NewReader(data))
}

func cloneMember(m *Member) *Member {
	c := *m
	c.Extra = bytes.Clone(m.Extra)
	c.LocalExtra = bytes.Clone(m.LocalExtra)
	return &c
}

// lineWriter is where index lines go: a plain index, or ZipNum blocks.
type lineWriter interface {
	writeLine([]byte) error
	close() error
}

type plainWriter struct{ w *bufio.Writer }

func (p *plainWriter) writeLine(l []byte) error {
	p.w.Write(l)
	return p.w.WriteByte('\n')
}

func (p *plainWriter) close() error { return p.w.Flush() }

// newTemp creates a temporary file, removed at the end.
func (w *rebuildWrite) newTemp() (*os.File, error) {
	f, err := os.CreateTemp(w.TempDir, ".tmp-wacz-index-*")
	if err == nil {
		w.temps = append(w.temps, f.Name())
	}
	return f, err
}

// rebuildIndex writes the index's new content to temporary files and
// records them in w.rebuilt.
func (w *rebuildWrite) rebuildIndex(ix *Index) error {
	src, b, files, res := w.Source, w.Rebuild, w.files, w.res
	newTemp := w.newTemp
	cdxFile, err := newTemp()
	if err != nil {
		return err
	}
	defer cdxFile.Close()
	cdxBuf := bufio.NewWriterSize(cdxFile, 1<<20)
	var out lineWriter
	var idxFile *os.File
	var idxBuf *bufio.Writer
	switch ix.Kind {
	case PlainIndex:
		out = &plainWriter{w: cdxBuf}
	case ZipNumIndex:
		lay, err := src.zipNumLayout(ix)
		if err != nil {
			return err
		}
		if idxFile, err = newTemp(); err != nil {
			return err
		}
		defer idxFile.Close()
		idxBuf = bufio.NewWriter(idxFile)
		out = newZipNumWriter(cdxBuf, idxBuf, path.Base(ix.CDX.Name), lay.linesPerBlock, lay.finalNewline, lay.style)
	default:
		return errorf(src.Name, ix.CDX.Name, -1, ErrIndex, "a %s index without .idx cannot be rebuilt", ix.Kind)
	}
	same := false
	if b.FreshIndex {
		// With known lines the replacements' sums are sumReplacements'
		// to give, whether or not the lines can be read.
		read := w.indexed
		if w.known != nil {
			read = nil
		}
		err = b.freshIndex(files, w.known, out, res, read, w.kernel)
	} else {
		same, err = b.updateIndex(ix, files, out, res)
	}
	if err == nil {
		err = out.close()
	}
	if err == nil {
		err = cdxBuf.Flush()
	}
	if err == nil && idxBuf != nil {
		err = idxBuf.Flush()
	}
	if err != nil {
		return err
	}
	if same {
		// Every line as it was, in its place: the index is copied as it
		// is, not recompressed.
		return nil
	}
	for _, f := range []struct {
		file *os.File
		m    *Member
	}{{cdxFile, ix.CDX}, {idxFile, ix.Idx}} {
		if f.file == nil {
			continue
		}
		p, err := prepare(f.file, f.m.Method == Deflate, newTemp)
		if err != nil {
			return err
		}
		w.rebuilt[f.m.Name] = p
	}
	return nil
}

// prepare makes a prepared member of the file: its size (and, deflated,
// its compressed copy, CRC-32 and SHA-256).
func prepare(f *os.File, deflate bool, newTemp func() (*os.File, error)) (*prepared, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	p := &prepared{path: f.Name(), size: fi.Size(), csize: fi.Size()}
	if !deflate {
		return p, nil
	}
	c, err := newTemp()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(c, 1<<20)
	fw, _ := flate.NewWriter(bw, flate.DefaultCompression)
	crc, sum := crc32.NewIEEE(), sha256.New()
	if _, err := io.Copy(io.MultiWriter(fw, crc, sum), f); err != nil {
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	cfi, err := c.Stat()
	if err != nil {
		return nil, err
	}
	p.path, p.csize, p.crc, p.sum, p.deflated = c.Name(), cfi.Size(), crc.Sum32(), sum.Sum(nil), true
	return p, nil
}

// updateIndex streams the source index's lines through b.Index, and
// reports whether every line came out as it went in.
func (b *Rebuild) updateIndex(ix *Index, files map[string]*os.File, out lineWriter, res *Result) (same bool, err error) {
	src := b.Source
	name := src.Name + ": " + ix.CDX.Name
	rc := src.IndexReader(ix)
	defer rc.Close()
	r, err := cdx.NewReader(rc, name, cdx.Options{Format: cdx.CDXJ})
	if err != nil {
		return false, errorf(src.Name, ix.CDX.Name, -1, ErrIndex, "%v", err)
	}
	g := &groupWriter{out: out}
	changedBefore := res.Changed
	var buf []byte
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, errorf(src.Name, ix.CDX.Name, -1, ErrIndex, "%v", err)
		}
		if l.Kind != cdx.Record {
			if err := g.flush(); err != nil {
				return false, err
			}
			if len(bytes.TrimSpace(l.Raw)) > 0 {
				if err := out.writeLine(l.Raw); err != nil {
					return false, err
				}
				res.Lines++
			}
			continue
		}
		oldDigest, oldMIME, oldLength := bytes.Clone(l.Digest), bytes.Clone(l.MIME), l.Length
		changed, err := b.Index.Update(l, name)
		if err != nil {
			return false, errorf(src.Name, ix.CDX.Name, -1, ErrIndex, "%v", err)
		}
		if changed && len(oldDigest) > 0 && len(l.Digest) > 0 && !bytes.Equal(oldDigest, l.Digest) && sameDigest(oldDigest, l.Digest) {
			// The same payload digest, spelt as this index spells it.
			l.SetDigest(string(oldDigest))
		}
		buf = l.AppendTo(buf[:0])
		if changed {
			res.Changed++
			if l.Length != oldLength || !bytes.Equal(l.MIME, oldMIME) {
				if buf, err = b.fixRecordDigest(buf, l, files); err != nil {
					return false, err
				}
			}
		}
		if err := g.add(buf); err != nil {
			return false, err
		}
		res.Lines++
	}
	if err := g.flush(); err != nil {
		return false, err
	}
	return res.Changed == changedBefore && !g.reordered, nil
}

// sameDigest reports whether two spellings are of the same digest: the
// value after any label, case aside (base32 and hex alike).
func sameDigest(a, b []byte) bool {
	va, la := splitDigest(a)
	vb, lb := splitDigest(b)
	if la != "" && lb != "" && normAlgo(la) != normAlgo(lb) {
		return false
	}
	return strings.EqualFold(va, vb)
}

func splitDigest(d []byte) (value, label string) {
	if i := bytes.IndexByte(d, ':'); i >= 0 {
		return string(d[i+1:]), string(d[:i])
	}
	return string(d), ""
}

func normAlgo(a string) string { return strings.ReplaceAll(strings.ToLower(a), "-", "") }

// fixRecordDigest sets the "recordDigest" of a line that has one
// (ArchiveWeb.page: the SHA-256 of the record as stored) to that of the
// record now at the line's offset.
func (b *Rebuild) fixRecordDigest(line []byte, l *cdx.Line, files map[string]*os.File) ([]byte, error) {
	start, end, ok := jsonStringValue(line, "recordDigest")
	if !ok {
		return line, nil
	}
	f := files["archive/"+string(l.Filename)]
	if f == nil || l.Offset < 0 || l.Length < 0 {
		return nil, errorf(b.Source.Name, "archive/"+string(l.Filename), -1, ErrIndex, "a changed line of a member that was not replaced")
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, l.Offset, l.Length)); err != nil {
		return nil, err
	}
	label := "sha256:"
	if i := bytes.IndexByte(line[start:end], ':'); i >= 0 {
		label = string(line[start : start+i+1])
	}
	v := label + hex.EncodeToString(h.Sum(nil))
	return append(line[:start:start], append([]byte(v), line[end:]...)...), nil
}

// jsonStringValue finds the string value of key in a CDXJ line's JSON,
// and returns where its text (inside the quotes) is.
func jsonStringValue(line []byte, key string) (start, end int, ok bool) {
	k := []byte(`"` + key + `"`)
	i := bytes.Index(line, k)
	if i < 0 {
		return 0, 0, false
	}
	j := i + len(k)
	for j < len(line) && (line[j] == ' ' || line[j] == ':') {
		j++
	}
	if j >= len(line) || line[j] != '"' {
		return 0, 0, false
	}
	start = j + 1
	for end = start; end < len(line) && line[end] != '"'; end++ {
		if line[end] == '\\' {
			end++
		}
	}
	if end >= len(line) {
		return 0, 0, false
	}
	return start, end, true
}

// groupWriter sorts the lines of each run of equal "urlkey timestamp": a
// rewrite changes a line's offset, length, mime or digest, never its
// key, so a sorted index stays sorted once each run is.
type groupWriter struct {
	out       lineWriter
	key       []byte
	lines     [][]byte
	reordered bool // some run was not in order as it came
}

func (g *groupWriter) add(l []byte) error {
	key := []byte(lineKey(l))
	if len(g.lines) > 0 && !bytes.Equal(key, g.key) {
		if err := g.flush(); err != nil {
			return err
		}
	}
	g.key = key
	g.lines = append(g.lines, bytes.Clone(l))
	return nil
}

func (g *groupWriter) flush() error {
	if len(g.lines) > 1 && !slices.IsSortedFunc(g.lines, bytes.Compare) {
		g.reordered = true
		slices.SortStableFunc(g.lines, bytes.Compare)
	}
	for _, l := range g.lines {
		if err := g.out.writeLine(l); err != nil {
			return err
		}
	}
	g.lines = g.lines[:0]
	return nil
}

// freshIndex indexes every WARC member (replaced ones from their files)
// with warcindex and writes the lines sorted: the known lines of every
// member if given, else (or if they cannot be read) those of a read of
// the members.
func (b *Rebuild) freshIndex(files map[string]*os.File, known map[string]knownLines, out lineWriter, res *Result, read func(string, rawSum), withSHA256 bool) error {
	newSorter := func() *lineSorter {
		s := newLineSorter(b.TempDir)
		if b.SortMemory > 0 {
			s.memLimit = b.SortMemory
		}
		return s
	}
	s := newSorter()
	defer func() { s.close() }()
	if known == nil || addKnownLines(b.Source, known, s) != nil {
		s.close()
		s = newSorter()
		res.IndexedMembers = true
		if err := indexMembers(b.Source, files, s, read, withSHA256); err != nil {
			return err
		}
	}
	return s.each(func(l []byte) error {
		res.Lines++
		return out.writeLine(l)
	})
}

// indexMembers adds the warcindex lines of every WARC member of p to s,
// reading replaced members from files: read (if not nil) gets the size
// and CRC-32 (and withSHA256 SHA-256) of each one's bytes as indexed,
// once it is read whole.
func indexMembers(p *Package, files map[string]*os.File, s *lineSorter, read func(string, rawSum), withSHA256 bool) error {
	var buf []byte
	for _, m := range p.WARCs() {
		var r io.Reader
		var raw *rawSummer
		if f := files[m.Name]; f != nil {
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			r = io.NewSectionReader(f, 0, fi.Size())
			if read != nil {
				raw = newRawSummer(withSHA256)
				r = io.TeeReader(r, raw)
			}
		} else {
			sec, err := p.Section(m)
			if err != nil {
				return err
			}
			r = sec
		}
		err := warcindex.Index(r, IndexName(m.Name), func(e *warcindex.Entry) error {
			buf = e.AppendCDXJ(buf[:0])
			return s.add(buf)
		})
		if err != nil {
			return &Error{Package: p.Name, Member: m.Name, Offset: -1, Err: err}
		}
		if raw != nil {
			// What the index left unread (nothing, for a file that
			// ends with its last record) counts too.
			if _, err := drain(r, make([]byte, 64<<10)); err != nil {
				return &Error{Package: p.Name, Member: m.Name, Offset: -1, Err: err}
			}
			read(m.Name, raw.sum())
		}
	}
	return nil
}

// addKnownLines adds the known lines of every WARC member of p to s.
func addKnownLines(p *Package, known map[string]knownLines, s *lineSorter) error {
	for _, m := range p.WARCs() {
		k := known[m.Name]
		br := bufio.NewReaderSize(io.NewSectionReader(k.f, k.start, 1<<62), 256<<10)
		for {
			l, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				l = bytes.Clone(l)
				var rest []byte
				rest, err = br.ReadBytes('\n')
				l = append(l, rest...)
			}
			if err == io.EOF && len(l) == 0 {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %s: its known index lines: %w", p.Name, m.Name, err)
			}
			if err := s.add(l[:len(l)-1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// zipNumLayout reads what a rebuild keeps of a ZipNum index: the .idx's
// style, and from its first block the lines per block and whether a
// block's last line ends with a line feed.
func (p *Package) zipNumLayout(ix *Index) (*zipNumLayout, error) {
	blocks, st, err := p.readIdx(ix)
	if err != nil {
		return nil, err
	}
	lay := &zipNumLayout{style: st, linesPerBlock: DefaultLinesPerBlock, finalNewline: true, blocks: len(blocks)}
	if len(blocks) == 0 {
		return lay, nil
	}
	rc := p.Open(ix.CDX)
	defer rc.Close()
	zr, err := newGzipBlockReader(io.LimitReader(rc, blocks[0].length))
	if err != nil {
		return nil, errorf(p.Name, ix.CDX.Name, -1, ErrIndex, "its first block: %v", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, errorf(p.Name, ix.CDX.Name, -1, ErrIndex, "its first block: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lay.finalNewline = false
		data = append(data, '\n')
	}
	n := bytes.Count(data, []byte("\n"))
	if len(blocks) > 1 {
		lay.linesPerBlock = n
	} else {
		lay.linesPerBlock = max(n, DefaultLinesPerBlock)
	}
	return lay, nil
}
