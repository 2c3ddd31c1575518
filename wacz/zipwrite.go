package wacz

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"time"
	"unicode/utf8"
)

// zipWriter writes a ZIP file from its start to its end, never going
// back: every member's sizes and CRC-32 are known before its data (a file
// stored is read for its CRC-32 first, storeFile), so each local header
// carries them and no member has a data descriptor. The whole file's
// CRC-32 is computed as it is written, and its SHA-256 (on another core)
// when asked for: a rebuilt package that another requires is not read
// again for the hash its requirers name.
// ZIP64 fields are written only where a size or offset needs them.
type zipWriter struct {
	w   *bufio.Writer
	off int64
	dir []*Member
	sum *asyncHash  // of the whole file; nil if not asked for
	crc hash.Hash32 // of the whole file
}

// outFile is what a package is written to: a file.
type outFile interface {
	io.Writer
	io.WriterAt
}

// newZipWriter writes a ZIP file to f, taking its SHA-256 too if
// wholeSHA256.
func newZipWriter(f outFile, wholeSHA256 bool) *zipWriter {
	z := &zipWriter{crc: crc32.NewIEEE()}
	if wholeSHA256 {
		z.sum = newAsyncHash()
		z.w = bufio.NewWriterSize(io.MultiWriter(f, z.crc, z.sum), copyBufferSize)
	} else {
		z.w = bufio.NewWriterSize(io.MultiWriter(f, z.crc), copyBufferSize)
	}
	return z
}

// copyBufferSize is the size of the reads of a member's data copied, and
// of the writer's buffer: large enough that the hashes on other cores
// get few, large chunks.
const copyBufferSize = 1 << 20

// sums are the SHA-256 (nil if not asked for) and CRC-32 of what was
// written; the writer takes no more writes after it (a deferred call ends
// the hashing goroutine of a write that failed).
func (z *zipWriter) sums() ([]byte, uint32) {
	if z.sum == nil {
		return nil, z.crc.Sum32()
	}
	return z.sum.Sum(), z.crc.Sum32()
}

// begin writes the local header of m (m.Size and m.CompressedSize set)
// and sets m.HeaderOffset and m.DataOffset.
func (z *zipWriter) begin(m *Member) error {
	if len(m.Name) > uint16max {
		return fmt.Errorf("member name of %d bytes", len(m.Name))
	}
	m.Flags &^= flagDescriptor
	if !isASCII(m.Name) && utf8.ValidString(m.Name) {
		m.Flags |= flagUTF8
	}
	m.HeaderOffset = z.off
	m.Extra = dropExtra(m.Extra, zip64ExtraID)
	m.LocalExtra = dropExtra(m.LocalExtra, zip64ExtraID)
	big := m.Size >= uint32max || m.CompressedSize >= uint32max
	m.ZIP64 = big || m.HeaderOffset >= uint32max
	local := m.LocalExtra
	if big {
		var z64 [20]byte
		binary.LittleEndian.PutUint16(z64[0:], zip64ExtraID)
		binary.LittleEndian.PutUint16(z64[2:], 16)
		binary.LittleEndian.PutUint64(z64[4:], uint64(m.Size))
		binary.LittleEndian.PutUint64(z64[12:], uint64(m.CompressedSize))
		local = append(z64[:], local...)
	}
	if len(local) > uint16max {
		return errors.New("extra fields too long")
	}
	m.ReaderVersion = max(m.ReaderVersion, 20)
	if m.ZIP64 {
		m.ReaderVersion = max(m.ReaderVersion, 45)
	}
	var h [localLen]byte
	binary.LittleEndian.PutUint32(h[0:], localSig)
	binary.LittleEndian.PutUint16(h[4:], m.ReaderVersion)
	binary.LittleEndian.PutUint16(h[6:], m.Flags)
	binary.LittleEndian.PutUint16(h[8:], m.Method)
	binary.LittleEndian.PutUint16(h[10:], m.ModifiedTime)
	binary.LittleEndian.PutUint16(h[12:], m.ModifiedDate)
	binary.LittleEndian.PutUint32(h[14:], m.CRC32)
	binary.LittleEndian.PutUint32(h[18:], uint32(min(m.CompressedSize, uint32max)))
	binary.LittleEndian.PutUint32(h[22:], uint32(min(m.Size, uint32max)))
	binary.LittleEndian.PutUint16(h[26:], uint16(len(m.Name)))
	binary.LittleEndian.PutUint16(h[28:], uint16(len(local)))
	z.write(h[:])
	z.write([]byte(m.Name))
	z.write(local)
	m.LocalExtra = local
	m.DataOffset = z.off
	z.dir = append(z.dir, m)
	return z.err()
}

// copyData writes m's data from r: exactly m.CompressedSize bytes.
func (z *zipWriter) copyData(m *Member, r io.Reader, hashers ...io.Writer) error {
	var dst io.Writer = z
	if len(hashers) > 0 {
		dst = io.MultiWriter(append([]io.Writer{z}, hashers...)...)
	}
	n, err := io.CopyBuffer(dst, io.LimitReader(r, m.CompressedSize), make([]byte, copyBufferSize))
	if err != nil {
		return err
	}
	if n != m.CompressedSize {
		return fmt.Errorf("%s: %d bytes, %d expected (the file changed?)", m.Name, n, m.CompressedSize)
	}
	return nil
}

// storeFile writes the file f, from its start, as the stored member m
// (header and data): its CRC-32 is read first, for the local header; its
// bytes are then copied with their SHA-256 (on another core) and CRC-32
// computed on the way, which must be the CRC-32 read first (else the file
// changed meanwhile). It returns the SHA-256.
func (z *zipWriter) storeFile(m *Member, f *os.File) ([]byte, error) {
	buf := make([]byte, copyBufferSize)
	crc := crc32.NewIEEE()
	n, err := io.CopyBuffer(crc, io.NewSectionReader(f, 0, 1<<62), buf)
	if err != nil {
		return nil, err
	}
	m.Method, m.Size, m.CompressedSize, m.CRC32 = Store, n, n, crc.Sum32()
	if err := z.begin(m); err != nil {
		return nil, err
	}
	crc.Reset()
	sum := newAsyncHash()
	_, err = io.CopyBuffer(io.MultiWriter(z, crc, sum), io.NewSectionReader(f, 0, n+1), buf)
	digest := sum.Sum()
	if err != nil {
		return nil, err
	}
	if z.off-m.DataOffset != n || crc.Sum32() != m.CRC32 {
		return nil, fmt.Errorf("%s: %s changed while it was written (%d bytes, CRC-32 %08x; read first: %d bytes, %08x)", m.Name, f.Name(), z.off-m.DataOffset, crc.Sum32(), n, m.CRC32)
	}
	return digest, nil
}

func (z *zipWriter) Write(p []byte) (int, error) {
	n, err := z.w.Write(p)
	z.off += int64(n)
	return n, err
}

func (z *zipWriter) write(p []byte) { z.Write(p) }

func (z *zipWriter) err() error {
	_, err := z.w.Write(nil)
	return err
}

// close writes the central directory and end records, and flushes.
func (z *zipWriter) close(comment []byte) error {
	start := z.off
	for _, m := range z.dir {
		extra := m.Extra
		var z64 []byte
		for _, v := range []struct {
			n    int64
			need bool
		}{{m.Size, m.Size >= uint32max}, {m.CompressedSize, m.CompressedSize >= uint32max}, {m.HeaderOffset, m.HeaderOffset >= uint32max}} {
			if v.need {
				z64 = binary.LittleEndian.AppendUint64(z64, uint64(v.n))
			}
		}
		if len(z64) > 0 {
			head := binary.LittleEndian.AppendUint16(nil, zip64ExtraID)
			head = binary.LittleEndian.AppendUint16(head, uint16(len(z64)))
			extra = append(append(head, z64...), extra...)
		}
		if len(extra) > uint16max || len(m.Comment) > uint16max {
			return fmt.Errorf("%s: extra fields or comment too long", m.Name)
		}
		var h [centralLen]byte
		binary.LittleEndian.PutUint32(h[0:], centralSig)
		binary.LittleEndian.PutUint16(h[4:], m.CreatorVersion)
		binary.LittleEndian.PutUint16(h[6:], m.ReaderVersion)
		binary.LittleEndian.PutUint16(h[8:], m.Flags)
		binary.LittleEndian.PutUint16(h[10:], m.Method)
		binary.LittleEndian.PutUint16(h[12:], m.ModifiedTime)
		binary.LittleEndian.PutUint16(h[14:], m.ModifiedDate)
		binary.LittleEndian.PutUint32(h[16:], m.CRC32)
		binary.LittleEndian.PutUint32(h[20:], uint32(min(m.CompressedSize, uint32max)))
		binary.LittleEndian.PutUint32(h[24:], uint32(min(m.Size, uint32max)))
		binary.LittleEndian.PutUint16(h[28:], uint16(len(m.Name)))
		binary.LittleEndian.PutUint16(h[30:], uint16(len(extra)))
		binary.LittleEndian.PutUint16(h[32:], uint16(len(m.Comment)))
		binary.LittleEndian.PutUint16(h[36:], m.InternalAttrs)
		binary.LittleEndian.PutUint32(h[38:], m.ExternalAttrs)
		binary.LittleEndian.PutUint32(h[42:], uint32(min(m.HeaderOffset, uint32max)))
		z.write(h[:])
		z.write([]byte(m.Name))
		z.write(extra)
		z.write([]byte(m.Comment))
		m.Extra = extra
	}
	end := z.off
	size := end - start
	entries := int64(len(z.dir))
	if entries >= uint16max || size >= uint32max || start >= uint32max {
		var e [end64Len]byte
		binary.LittleEndian.PutUint32(e[0:], end64Sig)
		binary.LittleEndian.PutUint64(e[4:], end64Len-12)
		binary.LittleEndian.PutUint16(e[12:], 45)
		binary.LittleEndian.PutUint16(e[14:], 45)
		binary.LittleEndian.PutUint64(e[24:], uint64(entries))
		binary.LittleEndian.PutUint64(e[32:], uint64(entries))
		binary.LittleEndian.PutUint64(e[40:], uint64(size))
		binary.LittleEndian.PutUint64(e[48:], uint64(start))
		z.write(e[:])
		var l [end64LocLen]byte
		binary.LittleEndian.PutUint32(l[0:], end64LocSig)
		binary.LittleEndian.PutUint64(l[8:], uint64(end))
		binary.LittleEndian.PutUint32(l[16:], 1)
		z.write(l[:])
	}
	if len(comment) > uint16max {
		comment = comment[:uint16max]
	}
	var e [endLen]byte
	binary.LittleEndian.PutUint32(e[0:], endSig)
	binary.LittleEndian.PutUint16(e[8:], uint16(min(entries, uint16max)))
	binary.LittleEndian.PutUint16(e[10:], uint16(min(entries, uint16max)))
	binary.LittleEndian.PutUint32(e[12:], uint32(min(size, uint32max)))
	binary.LittleEndian.PutUint32(e[16:], uint32(min(start, uint32max)))
	binary.LittleEndian.PutUint16(e[20:], uint16(len(comment)))
	z.write(e[:])
	z.write(comment)
	return z.w.Flush()
}

// msdosTime is t as MS-DOS time and date fields (UTC; 1980 at the
// earliest).
func msdosTime(t time.Time) (tm, date uint16) {
	t = t.UTC()
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	tm = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return tm, date
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Place is where a WARC member's bytes are in a package, with their
// CRC-32: a package whose WARC members all have theirs again holds its
// records where they were (what a crawl index's originals of it rest
// on).
type Place struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	CRC32  uint32 `json:"crc32"`
}

// ArchivePlaces are where the package's WARC members are; an error if a
// rewrite of its metadata alone (datapackage.json and its digest file,
// which a rebuild writes after every other member) would move one: it
// comes after the metadata.
func (p *Package) ArchivePlaces() ([]Place, error) {
	var out []Place
	meta := false
	for _, m := range p.Members {
		if m.Name == DatapackageName || m.Name == DigestName {
			meta = true
			continue
		}
		if !m.IsArchive() {
			continue
		}
		if meta {
			return nil, fmt.Errorf("its WARC member %s comes after its datapackage.json: writing its requires entries anew would move the records the index has at their offsets", m.Name)
		}
		out = append(out, Place{Name: m.Name, Offset: m.DataOffset, Size: m.Size, CRC32: m.CRC32})
	}
	return out, nil
}
