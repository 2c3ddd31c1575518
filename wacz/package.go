package wacz

import (
	"compress/flate"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// Package is an open WACZ file.
type Package struct {
	// Name is how errors name the package (its path as given to Open).
	Name string
	// Size is the package file's size.
	Size int64
	// Members are the ZIP's members in central directory order.
	Members []*Member
	// ZIP64 is set when the ZIP has ZIP64 records (needed past 4 GiB or
	// 65,535 members; some writers add them anyway).
	ZIP64 bool
	// Comment is the ZIP comment.
	Comment []byte
	// Datapackage is datapackage.json; DatapackageRaw its bytes.
	Datapackage    *Datapackage
	DatapackageRaw []byte
	// Digest is datapackage-digest.json, nil when the package has none
	// (WACZ 1.0.0); DigestRaw its bytes.
	Digest    *DigestFile
	DigestRaw []byte

	r         io.ReaderAt
	closer    io.Closer
	byName    map[string]*Member
	centralAt int64
}

// maxMetadata bounds datapackage.json and datapackage-digest.json, which
// are read whole.
const maxMetadata = 64 << 20

// Open opens the WACZ file at path and reads its structure: the ZIP's
// directory and every local header (see readDir for what is checked),
// every member name, that WARC members are stored, datapackage.json and
// datapackage-digest.json. It reads no member's content beyond those: Check
// verifies hashes and indexes. Bad input is an *Error naming the package
// and member.
func Open(path string) (*Package, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	p, err := NewPackage(f, fi.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	p.closer = f
	return p, nil
}

// NewPackage reads a package from r, of size bytes, named name in errors.
func NewPackage(r io.ReaderAt, size int64, name string) (*Package, error) {
	d, err := readDir(r, size, name)
	if err != nil {
		return nil, err
	}
	p := &Package{Name: name, Size: size, Members: d.members, ZIP64: d.zip64, Comment: d.comment, r: r,
		byName: make(map[string]*Member, len(d.members)), centralAt: d.centralOffset}
	for _, m := range d.members {
		p.byName[m.Name] = m
		if m.IsArchive() && m.Method != Store {
			return nil, errorf(name, m.Name, m.HeaderOffset, ErrCompressedWARC, "compression method %d", m.Method)
		}
	}
	dp := p.byName[DatapackageName]
	if dp == nil {
		return nil, errorf(name, DatapackageName, -1, ErrDatapackage, "the package has none: not a WACZ")
	}
	if p.DatapackageRaw, err = p.readSmall(dp); err != nil {
		return nil, err
	}
	if p.Datapackage, err = ParseDatapackage(p.DatapackageRaw); err != nil {
		return nil, &Error{Package: name, Member: DatapackageName, Offset: -1, Err: err}
	}
	if dg := p.byName[DigestName]; dg != nil {
		if p.DigestRaw, err = p.readSmall(dg); err != nil {
			return nil, err
		}
		if p.Digest, err = ParseDigestFile(p.DigestRaw); err != nil {
			return nil, &Error{Package: name, Member: DigestName, Offset: -1, Err: err}
		}
	}
	return p, nil
}

// Close closes the package file (of Open).
func (p *Package) Close() error {
	if p.closer != nil {
		return p.closer.Close()
	}
	return nil
}

// Member returns the member of that name, or nil.
func (p *Package) Member(name string) *Member { return p.byName[name] }

// WARCs are the WARC (and ARC) members, under archive/, in ZIP order.
func (p *Package) WARCs() []*Member {
	var out []*Member
	for _, m := range p.Members {
		if m.IsArchive() {
			out = append(out, m)
		}
	}
	return out
}

// Signed reports whether datapackage-digest.json holds a signature.
func (p *Package) Signed() bool { return p.Digest != nil && p.Digest.Signed() }

// ReaderAt is the package file.
func (p *Package) ReaderAt() io.ReaderAt { return p.r }

// Section returns the bytes of a stored member (a WARC member) as a
// SectionReader: offset o in it is offset m.DataOffset+o of the package,
// so record offsets and lengths in it are those of the WARC file.
func (p *Package) Section(m *Member) (*io.SectionReader, error) {
	if m.Method != Store {
		return nil, errorf(p.Name, m.Name, m.HeaderOffset, ErrCompressedWARC, "not stored: it cannot be read by range")
	}
	return io.NewSectionReader(p.r, m.DataOffset, m.Size), nil
}

// Raw returns the member's bytes as stored (compressed, for a deflated
// member).
func (p *Package) Raw(m *Member) *io.SectionReader {
	return io.NewSectionReader(p.r, m.DataOffset, m.CompressedSize)
}

// Open returns the member's content, inflated if need be; reading it to
// the end checks its size and CRC-32 (an *Error of ErrDamaged).
func (p *Package) Open(m *Member) io.ReadCloser {
	var rc io.ReadCloser = io.NopCloser(p.Raw(m))
	if m.Method == Deflate {
		rc = flate.NewReader(p.Raw(m))
	}
	return &checkedReader{rc: rc, p: p, m: m, crc: crc32.NewIEEE()}
}

// readSmall reads a metadata member whole.
func (p *Package) readSmall(m *Member) ([]byte, error) {
	if m.Size > maxMetadata {
		return nil, errorf(p.Name, m.Name, m.HeaderOffset, ErrDatapackage, "%d bytes: too large", m.Size)
	}
	rc := p.Open(m)
	defer rc.Close()
	return io.ReadAll(rc)
}

// checkedReader checks a member's size and CRC-32 at its end.
type checkedReader struct {
	rc  io.ReadCloser
	p   *Package
	m   *Member
	crc hash.Hash32
	n   int64
}

func (c *checkedReader) Read(b []byte) (int, error) {
	n, err := c.rc.Read(b)
	c.crc.Write(b[:n])
	c.n += int64(n)
	if c.n > c.m.Size {
		return n, errorf(c.p.Name, c.m.Name, c.m.DataOffset, ErrDamaged, "more than its %d bytes", c.m.Size)
	}
	switch {
	case err == io.EOF:
		if c.n != c.m.Size {
			return n, errorf(c.p.Name, c.m.Name, c.m.DataOffset, ErrDamaged, "%d bytes, the ZIP says %d", c.n, c.m.Size)
		}
		if s := c.crc.Sum32(); s != c.m.CRC32 {
			return n, errorf(c.p.Name, c.m.Name, c.m.DataOffset, ErrDamaged, "CRC-32 %08x, the ZIP says %08x", s, c.m.CRC32)
		}
	case err != nil && !errors.As(err, new(*Error)):
		if errors.Is(err, io.ErrUnexpectedEOF) || isFlateError(err) {
			return n, errorf(c.p.Name, c.m.Name, c.m.DataOffset, ErrDamaged, "%v", err)
		}
	}
	return n, err
}

func (c *checkedReader) Close() error { return c.rc.Close() }

func isFlateError(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce) || strings.Contains(err.Error(), "flate")
}

// IndexName is the name a WACZ index gives a WARC member in its
// "filename" fields: its path after "archive/".
func IndexName(member string) string { return strings.TrimPrefix(member, "archive/") }
