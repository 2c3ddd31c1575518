package wacz

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"sort"
	"strconv"
	"strings"

	"warcdedup/cdx"
	"warcdedup/warcindex"
)

// CheckOptions choose what Check reads.
type CheckOptions struct {
	// Records compares the index with the WARC members record by record:
	// every record is read (gzip members inflated), as an indexer does.
	// Without it the index's structure (ZipNum blocks, order, the files
	// it names) is checked, not what its lines say.
	Records bool
	// RecordsOf, if set, limits the comparison to the WARC members it
	// accepts (by member name): after a rewrite, the members rewritten.
	RecordsOf func(member string) bool
	// TempDir holds the comparison's sort files when they outgrow memory
	// ("" is the system's).
	TempDir string
	// MaxProblems bounds the problems reported of each kind (0: 20).
	MaxProblems int
	// PackageSHA256 asks for the whole file's SHA-256 (Report.SHA256), a
	// second SHA-256 of every byte beside the members' own: who needs it
	// asks (a rebuild takes it as it writes, Result.SHA256).
	PackageSHA256 bool
	// Deferred, if set, names the members whose content Check does not
	// read: the caller compares their SHA-256 with datapackage.json
	// itself (Datapackage.Resources), from bytes it reads anyway, as the
	// hash stage of warcdedup does for the WARC members. Their sizes are
	// still checked against the ZIP and datapackage.json; every other
	// member is read whole, each at its offset (the whole file's CRC-32
	// is then not taken: Report.CRC32 is 0).
	Deferred func(member string) bool
	// Written, if set, makes Check the check of a package just written
	// (Rebuild.Write's Result): each member is read for its CRC-32 and
	// size against the ZIP, the whole file for its size and CRC-32 as
	// written, and datapackage.json's hashes are compared with the
	// SHA-256 each member had as it was written (Result.MemberSHA256)
	// instead of a second SHA-256 of every byte: the CRC-32 proves the
	// bytes on disk are those the SHA-256 was taken of, when they were
	// written from memory. A member the kernel copied in
	// (Result.CopiedFrom) was read for its SHA-256 before a copy that
	// read it again: its SHA-256 is taken again. A checker that
	// trusts nothing of the writer (tests, wacztest) leaves it nil.
	Written *Result
}

// Report is what Check found.
type Report struct {
	Package string
	// Problems are the bad input found, each an *Error naming the
	// member: none means the package is what its metadata says.
	Problems []error
	// Omitted counts problems found beyond MaxProblems.
	Omitted int
	// Size and CRC32 are the whole package file's, and SHA256 too when
	// asked for (PackageSHA256).
	Size   int64
	CRC32  uint32
	SHA256 []byte
	// Signed is set when datapackage-digest.json holds a signature (its
	// hash is checked, the signature itself is not).
	Signed bool
	// Indexes describe the indexes read.
	Indexes []IndexReport
	// Records counts the records read (Records option), Indexed those an
	// index line is expected for.
	Records, Indexed int64
	// URLKeysSpeltOtherwise counts lines whose urlkey differs from
	// warcio.js 2.x's only in percent-encoding and case (older indexers).
	URLKeysSpeltOtherwise int64

	max   int
	kinds map[error]int
}

// IndexReport describes one index.
type IndexReport struct {
	Name          string
	Kind          IndexKind
	Lines         int64
	Blocks        int // ZipNum
	LinesPerBlock int // ZipNum: of the first block
}

// Err is nil when there were no problems, else the problems joined.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	errs := r.Problems
	if r.Omitted > 0 {
		errs = append(append([]error(nil), errs...), fmt.Errorf("%s: %d more problems", r.Package, r.Omitted))
	}
	return errors.Join(errs...)
}

func (r *Report) add(err error) {
	var kind error
	for _, k := range []error{ErrDamaged, ErrHash, ErrNotListed, ErrIndex, ErrDatapackage, ErrDigestFile, ErrUnsupported} {
		if errors.Is(err, k) {
			kind = k
			break
		}
	}
	if r.kinds[kind] >= r.max {
		r.Omitted++
		return
	}
	r.kinds[kind]++
	r.Problems = append(r.Problems, err)
}

// Check reads the whole package once and checks it: every member's
// CRC-32, SHA-256 and size against the ZIP and datapackage.json, that
// datapackage.json lists every member and lists nothing the ZIP lacks,
// datapackage-digest.json's hash of datapackage.json, the index's
// structure (ZipNum blocks where index.idx says, lines in order, the files
// they name), and with opt.Records every index line against the record at
// its offset, every record against its line. Problems go in the Report;
// the error is for a package that could not be read at all.
func Check(p *Package, opt CheckOptions) (*Report, error) {
	r := &Report{Package: p.Name, Size: p.Size, Signed: p.Signed(), max: opt.MaxProblems, kinds: map[error]int{}}
	if r.max <= 0 {
		r.max = 20
	}
	var cmp *indexComparison
	if opt.Records {
		cmp = newIndexComparison(p, opt.TempDir, r)
		cmp.only = opt.RecordsOf
		defer cmp.close()
	}
	var sums map[string][]byte
	var err error
	if opt.Deferred != nil {
		sums, err = p.readMembers(r, cmp, opt.Deferred)
	} else {
		sums, err = p.readAll(r, cmp, opt.PackageSHA256, opt.Written)
	}
	if err != nil {
		return nil, err
	}
	if opt.Written != nil {
		// A member the kernel copied in was read twice: for the SHA-256
		// datapackage.json gives (Result.MemberSHA256) and by the copy.
		// Its CRC-32 alone does not prove the two reads the same bytes
		// (a change that keeps it is easily made): its SHA-256 is taken
		// again here, of the bytes on disk.
		for name, from := range opt.Written.CopiedFrom {
			if m := p.Member(name); m != nil && !bytes.Equal(sums[name], opt.Written.MemberSHA256[name]) {
				r.add(errorf(p.Name, name, m.DataOffset, ErrDamaged, "SHA-256 %x, datapackage.json says %x, which %s had when it was read for its size, CRC-32 and SHA-256: it changed after that read, before or while it was copied in", sums[name], opt.Written.MemberSHA256[name], from))
			}
		}
		sums = opt.Written.MemberSHA256
		if !bytes.Equal(p.DatapackageRaw, opt.Written.Datapackage) {
			r.add(errorf(p.Name, DatapackageName, -1, ErrDamaged, "it reads back other than it was written"))
		}
	}
	p.checkMetadata(r, sums, opt.Deferred)
	if err := p.checkIndexes(r, cmp); err != nil {
		return nil, err
	}
	if cmp != nil {
		if err := cmp.compare(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readAll reads the package file from start to end once: its CRC-32 (and
// SHA-256 if wholeSum), and each member's content (inflated where
// deflated) for its CRC-32, size and, unless written (a package just
// written: CheckOptions.Written) and not copied in by the kernel
// (Result.CopiedFrom), SHA-256; WARC members also go to the
// comparison's indexer.
func (p *Package) readAll(r *Report, cmp *indexComparison, wholeSum bool, written *Result) (map[string][]byte, error) {
	byOffset := append([]*Member(nil), p.Members...)
	sort.Slice(byOffset, func(i, j int) bool { return byOffset[i].DataOffset < byOffset[j].DataOffset })
	sums := map[string][]byte{}
	var pos int64
	wholeCRC, wholeState := &crcChain{}, sha256.New()
	if a := written.aheadFor(cmp, wholeSum, p.Size); a != nil {
		// The members before the metadata files were read back while
		// the rebuild waited (Rebuild.ReadBack): the read goes on.
		crc, sha, err := a.wholeSums(wholeSum)
		if err != nil {
			return nil, err
		}
		wholeCRC, wholeState, pos = crc, sha, a.end
		byOffset = a.resume(p, r, byOffset, sums)
	}
	var whole io.Writer = wholeCRC
	var wholeSHA *asyncHash
	if wholeSum {
		// Computed on another core, beside the members' own.
		wholeSHA = newAsyncHashOf(wholeState)
		defer wholeSHA.Sum()
		whole = io.MultiWriter(wholeCRC, wholeSHA)
	}
	src := bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(p.r, pos, p.Size-pos), whole), 1<<20)
	crc := crc32.NewIEEE()
	buf := make([]byte, copyBufferSize)
	for _, m := range byOffset {
		if _, err := io.CopyN(io.Discard, src, m.DataOffset-pos); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		pos = m.DataOffset
		var from string // the file the kernel copied m's bytes from
		if written != nil {
			from = written.CopiedFrom[m.Name]
		}
		digest, err := p.readMember(r, cmp, m, src, crc, buf, written == nil || from != "", from)
		if err != nil {
			return nil, err
		}
		pos += m.CompressedSize
		sums[m.Name] = digest
	}
	if _, err := drain(src, buf); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	r.CRC32 = wholeCRC.Sum32()
	if wholeSHA != nil {
		r.SHA256 = wholeSHA.Sum()
	}
	return sums, nil
}

// readMembers reads each member but the deferred ones at its offset, as
// readAll reads them, the package's own file unread between them.
func (p *Package) readMembers(r *Report, cmp *indexComparison, deferred func(string) bool) (map[string][]byte, error) {
	sums := map[string][]byte{}
	crc := crc32.NewIEEE()
	buf := make([]byte, copyBufferSize)
	for _, m := range p.Members {
		if deferred(m.Name) {
			continue
		}
		src := bufio.NewReaderSize(io.NewSectionReader(p.r, m.DataOffset, m.CompressedSize), 64<<10)
		digest, err := p.readMember(r, cmp, m, src, crc, buf, true, "")
		if err != nil {
			return nil, err
		}
		sums[m.Name] = digest
	}
	return sums, nil
}

// readMember reads the member m's stored bytes from src (which is at
// its data): its content (inflated where deflated) for its CRC-32, size
// and, with memberSHA, SHA-256, which it returns; a WARC member also
// goes to the comparison's indexer. Problems go in r; the error is for a
// package that could not be read. from, if not "", is the file the
// kernel copied m's bytes from after reading them for their CRC-32
// (Result.CopiedFrom): a CRC-32 other than that is the file changed
// between its read and its copy, and said so.
func (p *Package) readMember(r *Report, cmp *indexComparison, m *Member, src io.Reader, crc hash.Hash32, buf []byte, memberSHA bool, from string) ([]byte, error) {
	crc.Reset()
	raw := &io.LimitedReader{R: src, N: m.CompressedSize}
	var content io.Reader = raw
	if m.Method == Deflate {
		content = flate.NewReader(raw)
	}
	counted := &counter{}
	var sum *asyncHash
	if memberSHA {
		// The member's SHA-256 on another core, beside the CRC-32 and the
		// indexer.
		sum = newAsyncHash()
		content = io.TeeReader(content, io.MultiWriter(crc, sum, counted))
	} else {
		content = io.TeeReader(content, io.MultiWriter(crc, counted))
	}
	var err error
	if cmp != nil && m.IsArchive() && cmp.compares(m.Name) {
		err = cmp.indexMember(m, content)
		if err == nil {
			_, err = drain(content, buf) // what the indexer left
		}
	} else {
		_, err = drain(content, buf)
	}
	if err != nil && !errors.As(err, new(*Error)) {
		r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "reading it: %v", err))
	} else if err != nil {
		r.add(err)
	}
	var digest []byte
	if sum != nil {
		digest = sum.Sum()
	}
	if rest, err := drain(raw, buf); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	} else if rest > 0 && m.Method == Deflate {
		r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "%d bytes after its deflate stream", rest))
	}
	if raw.N > 0 {
		r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "the file ends %d bytes into its data", raw.N))
	}
	switch {
	case counted.n != m.Size:
		r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "%d bytes, the ZIP says %d", counted.n, m.Size))
	case crc.Sum32() != m.CRC32 && from != "":
		r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "CRC-32 %08x, the ZIP says %08x, which %s had when it was read for its size, CRC-32 and SHA-256: it changed after that read, before or while it was copied in", crc.Sum32(), m.CRC32, from))
	case crc.Sum32() != m.CRC32:
		r.add(errorf(p.Name, m.Name, m.DataOffset, ErrDamaged, "CRC-32 %08x, the ZIP says %08x", crc.Sum32(), m.CRC32))
	}
	return digest, nil
}

// drain reads r to its end in reads of buf's size (io.Discard's own are
// of 8 KB: a hash on another core gets as many chunks).
func drain(r io.Reader, buf []byte) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{io.Discard}, r, buf)
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// checkMetadata checks datapackage.json's resources against the members
// and datapackage-digest.json against datapackage.json.
func (p *Package) checkMetadata(r *Report, sums map[string][]byte, deferred func(string) bool) {
	rs, err := p.Datapackage.Resources()
	if err != nil {
		r.add(&Error{Package: p.Name, Member: DatapackageName, Offset: -1, Err: err})
		return
	}
	if p.Datapackage.Version() == "" {
		r.add(errorf(p.Name, DatapackageName, -1, ErrDatapackage, "no wacz_version"))
	}
	listed := map[string]bool{}
	for _, res := range rs {
		listed[res.Path] = true
		m := p.Member(res.Path)
		switch {
		case m == nil:
			r.add(errorf(p.Name, res.Path, -1, ErrNotListed, "datapackage.json lists it, the package does not hold it"))
		case res.SHA256 == nil:
			r.add(errorf(p.Name, res.Path, -1, ErrDatapackage, "datapackage.json gives no SHA-256 of it (%q)", res.Hash))
		case deferred != nil && deferred(res.Path):
			// Its SHA-256 is the caller's to compare: its size only.
			if res.Bytes >= 0 && res.Bytes != m.Size {
				r.add(errorf(p.Name, res.Path, -1, ErrHash, "%d bytes, datapackage.json says %d", m.Size, res.Bytes))
			}
		case !bytes.Equal(res.SHA256, sums[res.Path]):
			r.add(errorf(p.Name, res.Path, -1, ErrHash, "SHA-256 %x, datapackage.json says %s", sums[res.Path], res.Hash))
		case res.Bytes >= 0 && res.Bytes != m.Size:
			r.add(errorf(p.Name, res.Path, -1, ErrHash, "%d bytes, datapackage.json says %d", m.Size, res.Bytes))
		}
	}
	for _, m := range p.Members {
		if !listed[m.Name] && !m.IsDir() && m.Name != DatapackageName && m.Name != DigestName {
			r.add(errorf(p.Name, m.Name, -1, ErrNotListed, "datapackage.json does not list it"))
		}
	}
	if p.Digest != nil {
		want := sha256.Sum256(p.DatapackageRaw)
		switch {
		case p.Digest.Path != DatapackageName:
			r.add(errorf(p.Name, DigestName, -1, ErrDigestFile, "its path is %q, not %s", p.Digest.Path, DatapackageName))
		case !bytes.Equal(p.Digest.SHA256, want[:]):
			r.add(errorf(p.Name, DigestName, -1, ErrHash, "gives %s for datapackage.json, whose SHA-256 is %x", p.Digest.Hash, want))
		}
		if sd := p.Digest.signedData(); sd != nil {
			if h, ok := sd.get("hash").str(); ok && !strings.EqualFold(h, p.Digest.Hash) {
				r.add(errorf(p.Name, DigestName, -1, ErrHash, "signedData signs %s, the file gives %s", h, p.Digest.Hash))
			}
		}
	}
}

// checkIndexes reads every index: ZipNum blocks against index.idx, the
// order of lines, the files they name; with a comparison, each line's
// fields.
func (p *Package) checkIndexes(r *Report, cmp *indexComparison) error {
	indexes, err := p.Indexes()
	if err != nil {
		r.add(err)
		return nil
	}
	if len(indexes) == 0 {
		r.add(errorf(p.Name, "indexes/", -1, ErrIndex, "the package has no index"))
	}
	warcs := map[string]bool{}
	for _, m := range p.WARCs() {
		warcs[IndexName(m.Name)] = true
	}
	for _, ix := range indexes {
		rep := IndexReport{Name: ix.Name(), Kind: ix.Kind}
		var prev []byte
		lineNo := int64(0)
		order := func(l []byte) error {
			lineNo++
			if len(l) == 0 || l[0] == '!' {
				return nil
			}
			if prev != nil && bytes.Compare(prev, l) > 0 {
				r.add(errorf(p.Name, ix.CDX.Name, -1, ErrIndex, "line %d is out of order (before the line above it in byte order)", lineNo))
			}
			prev = append(prev[:0], l...)
			return nil
		}
		if ix.Kind == ZipNumIndex {
			lay, err := p.checkZipNum(ix, order)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					return err
				}
				r.add(err)
				r.Indexes = append(r.Indexes, rep)
				continue
			}
			rep.Blocks, rep.LinesPerBlock = lay.blocks, lay.linesPerBlock
		}
		rc := p.IndexReader(ix)
		cr, err := cdx.NewReader(rc, p.Name+": "+ix.CDX.Name, cdx.Options{Format: cdx.CDXJ})
		if err != nil {
			rc.Close()
			r.add(errorf(p.Name, ix.CDX.Name, -1, ErrIndex, "%v", err))
			continue
		}
		lineNo = 0
		for {
			l, err := cr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var le *cdx.LineError
				if errors.As(err, &le) {
					r.add(errorf(p.Name, ix.CDX.Name, -1, ErrIndex, "%v", err))
					continue
				}
				var e *Error
				if errors.As(err, &e) {
					r.add(err)
					break
				}
				rc.Close()
				return err
			}
			if ix.Kind != ZipNumIndex {
				order(l.Raw)
			}
			if l.Kind != cdx.Record {
				continue
			}
			rep.Lines++
			if l.Filename == nil || !warcs[string(l.Filename)] {
				r.add(errorf(p.Name, ix.CDX.Name, -1, ErrIndex, "line %d names file %q, which is no WARC member of the package", l.Number, l.Filename))
				continue
			}
			if cmp != nil && cmp.compares("archive/"+string(l.Filename)) {
				if err := cmp.addLine(ix.CDX.Name, l); err != nil {
					rc.Close()
					return err
				}
			}
		}
		rc.Close()
		r.Indexes = append(r.Indexes, rep)
	}
	return nil
}

// indexComparison holds the index's lines and the records, both sorted
// by file and offset, to compare them.
type indexComparison struct {
	p      *Package
	r      *Report
	sorter *lineSorter
	buf    []byte
	only   func(member string) bool
}

// compares reports whether the records of a WARC member are compared.
func (c *indexComparison) compares(member string) bool { return c.only == nil || c.only(member) }

func newIndexComparison(p *Package, tmpDir string, r *Report) *indexComparison {
	return &indexComparison{p: p, r: r, sorter: newLineSorter(tmpDir)}
}

func (c *indexComparison) close() { c.sorter.close() }

// The fields of a comparison line, after "file \x01 offset \x01 kind":
// kind 'I' an index line, 'R' a record an indexer indexes, 'S' a record
// it skips.
const sep = '\x01'

func (c *indexComparison) key(file string, offset int64, kind byte) {
	c.buf = append(c.buf[:0], file...)
	c.buf = append(c.buf, sep)
	c.buf = append(c.buf, fmt.Sprintf("%020d", offset)...)
	c.buf = append(c.buf, sep, kind)
}

func (c *indexComparison) fields(vals ...string) error {
	for _, v := range vals {
		if strings.ContainsAny(v, "\x01\n") {
			v = strings.NewReplacer("\x01", "%01", "\n", "%0A").Replace(v)
		}
		c.buf = append(c.buf, sep)
		c.buf = append(c.buf, v...)
	}
	return c.sorter.add(c.buf)
}

// indexMember indexes a WARC member's records for the comparison.
func (c *indexComparison) indexMember(m *Member, content io.Reader) error {
	file := IndexName(m.Name)
	entry := func(kind byte) func(e *warcindex.Entry) error {
		return func(e *warcindex.Entry) error {
			c.r.Records++
			if kind == 'R' {
				c.r.Indexed++
			}
			has := func(ok bool, v string) string {
				if !ok {
					return "\x02"
				}
				return v
			}
			c.key(file, e.Offset, kind)
			return c.fields(e.Type, strconv.FormatInt(e.Length, 10), has(e.HasURL, e.URL), e.Date, has(e.HasMime, e.Mime),
				has(e.HasStatus, e.Status), e.PayloadDigest, e.URLKey, e.Method)
		}
	}
	err := warcindex.IndexWith(content, file, warcindex.Options{Skipped: entry('S')}, entry('R'))
	if err != nil {
		return &Error{Package: c.p.Name, Member: m.Name, Offset: -1, Err: fmt.Errorf("%w: %v", ErrDamaged, err)}
	}
	return nil
}

// addLine adds an index line for the comparison.
func (c *indexComparison) addLine(member string, l *cdx.Line) error {
	rd := ""
	if s, e, ok := jsonStringValue(l.Raw, "recordDigest"); ok {
		rd = string(l.Raw[s:e])
	}
	c.key(string(l.Filename), l.Offset, 'I')
	return c.fields(member, strconv.FormatInt(l.Number, 10), strconv.FormatInt(l.Length, 10), string(l.URLKey), string(l.Timestamp),
		string(l.URL), string(l.MIME), string(l.Status), string(l.Digest), rd)
}

// compare walks the sorted lines and records.
func (c *indexComparison) compare() error {
	var group [][]string
	var groupKey string
	flush := func() {
		if len(group) > 0 {
			c.compareGroup(groupKey, group)
		}
		group = group[:0]
	}
	err := c.sorter.each(func(l []byte) error {
		parts := strings.Split(string(l), "\x01")
		if len(parts) < 3 {
			return fmt.Errorf("comparison line %q", l)
		}
		k := parts[0] + "\x01" + parts[1]
		if k != groupKey {
			flush()
			groupKey = k
		}
		group = append(group, parts[2:])
		return nil
	})
	flush()
	return err
}

// compareGroup compares what is at one file and offset: index lines and
// the record there.
func (c *indexComparison) compareGroup(key string, group [][]string) {
	file, offStr, _ := strings.Cut(key, "\x01")
	off, _ := strconv.ParseInt(offStr, 10, 64)
	var rec []string
	skipped := false
	var lines [][]string
	for _, g := range group {
		switch g[0] {
		case "R":
			rec = g[1:]
		case "S":
			rec, skipped = g[1:], true
		case "I":
			lines = append(lines, g[1:])
		}
	}
	pkg := c.p.Name
	if len(lines) == 0 {
		if rec != nil && !skipped {
			c.r.add(errorf(pkg, "archive/"+file, -1, ErrIndex, "the %s record at %d (%s) has no index line", rec[0], off, rec[2]))
		}
		return
	}
	for i, ln := range lines {
		member, number := ln[0], ln[1]
		where := fmt.Sprintf("line %s (%s offset %d)", number, file, off)
		bad := func(format string, args ...any) {
			c.r.add(errorf(pkg, member, -1, ErrIndex, "%s: %s", where, fmt.Sprintf(format, args...)))
		}
		if rec == nil {
			bad("no record starts there")
			continue
		}
		if i > 0 {
			bad("a second line for the same record")
			continue
		}
		c.compareLine(file, off, ln, rec, skipped, bad)
	}
}

// compareLine compares an index line's fields with the record's:
// length, url, timestamp (a prefix of WARC-Date's digits, 14 at least),
// mime, status and digest as indexers write them, urlkey as warcio.js
// 2.x or, spelt otherwise, equal once percent-decoded and lower-cased,
// and recordDigest (ArchiveWeb.page) when the line has one.
func (c *indexComparison) compareLine(file string, off int64, ln, rec []string, skipped bool, bad func(string, ...any)) {
	length, urlkey, ts, url, mime, status, digest, recordDigest := ln[2], ln[3], ln[4], ln[5], ln[6], ln[7], ln[8], ln[9]
	typ, rlength, rurl, rdate, rmime, rstatus, rdigest, rkey := rec[0], rec[1], rec[2], rec[3], rec[4], rec[5], rec[6], rec[7]
	absent := func(v string) bool { return v == "\x02" }
	if length != rlength && length != "-1" {
		bad("length %s, the %s record's is %s", length, typ, rlength)
	}
	if url != "" && !absent(rurl) && url != rurl {
		bad("url %q, the record's is %q", url, rurl)
	}
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, rdate)
	if len(ts) < 14 && ts != digits || !strings.HasPrefix(digits, ts) {
		bad("timestamp %s, the record's date is %s", ts, rdate)
	}
	if skipped {
		return // an indexer that indexes more records: the rest is its own
	}
	if mime != "" && !absent(rmime) && mime != rmime {
		bad("mime %q, the record's is %q", mime, rmime)
	}
	if status != "" && !absent(rstatus) && status != rstatus {
		bad("status %s, the record's is %s", status, rstatus)
	}
	if digest != "" && rdigest != "" && !sameDigest([]byte(digest), []byte(rdigest)) {
		bad("digest %s, the record's WARC-Payload-Digest is %s", digest, rdigest)
	}
	if urlkey != rkey {
		if looseKey(urlkey) == looseKey(rkey) {
			c.r.URLKeysSpeltOtherwise++
		} else {
			bad("urlkey %q, warcio.js's is %q", urlkey, rkey)
		}
	}
	if recordDigest != "" {
		c.checkRecordDigest(file, off, length, recordDigest, bad)
	}
}

// checkRecordDigest compares a line's recordDigest with the SHA-256 of
// the record's bytes as stored.
func (c *indexComparison) checkRecordDigest(file string, off int64, lengthField, recordDigest string, bad func(string, ...any)) {
	length, err := strconv.ParseInt(lengthField, 10, 64)
	if err != nil {
		return
	}
	m := c.p.Member("archive/" + file)
	if m == nil || length < 0 {
		return
	}
	sec, err := c.p.Section(m)
	if err != nil {
		return
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(sec, off, length)); err != nil {
		bad("reading the record: %v", err)
		return
	}
	got := hex.EncodeToString(h.Sum(nil))
	if v, _ := splitDigest([]byte(recordDigest)); !strings.EqualFold(v, got) {
		bad("recordDigest %s, the record's SHA-256 is %s", recordDigest, got)
	}
}

// looseKey is a urlkey percent-decoded and lower-cased, to tell one
// spelt by another indexer (%3A for ":") from a wrong one.
func looseKey(k string) string {
	if !strings.Contains(k, "%") {
		return strings.ToLower(k)
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] == '%' && i+2 < len(k) && isHex(k[i+1]) && isHex(k[i+2]) {
			v, _ := strconv.ParseUint(k[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(k[i])
	}
	return strings.ToLower(b.String())
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
