package wacz

import (
	"bufio"
	"bytes"
	"crypto/sha256"
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
// stored is read for its CRC-32 first, or was read whole for its fresh
// index: storeRead), so each local header can carry them. A member
// that had a data descriptor (flag bit 3: a
// package a streaming writer wrote, as Browsertrix and ArchiveWeb.page
// do) keeps it, and its local header the zero CRC-32 and sizes such
// writers put there: a member copied is copied byte for byte, its
// descriptor too, and every member after it stays where it was (the
// offsets a crawl index has records at). The whole file's
// CRC-32 is computed as it is written, and its SHA-256 (on another core)
// when asked for (Create: the package is not read again for it; a
// rebuild leaves it to the check of what it wrote). Not asked for, and
// written to a file, the large stored members (a rebuild's replaced
// WARC members, members copied unchanged) are copied by the kernel
// (copyInKernel), their CRC-32 joined into the whole file's.
// ZIP64 fields are written only where a size or offset needs them.
type zipWriter struct {
	w   *bufio.Writer
	off int64
	dir []*Member
	sum *asyncHash // of the whole file; nil if not asked for
	crc *crcChain  // of the whole file
	// file, when set (copyInKernel), is the file written to: storeRead
	// and copyMember have the kernel copy a file's bytes into it
	// (copy_file_range), not through this process's memory.
	file *os.File
	// beforeCopy, if set, is called with a member's name between
	// storeFile's read of its file and its copy (tests:
	// Rebuild.beforeCopy).
	beforeCopy func(member string)
}

// outFile is what a package is written to: a file.
type outFile interface {
	io.Writer
	io.WriterAt
}

// newZipWriter writes a ZIP file to f, taking its SHA-256 too if
// wholeSHA256.
func newZipWriter(f outFile, wholeSHA256 bool) *zipWriter {
	z := &zipWriter{crc: &crcChain{}}
	if wholeSHA256 {
		z.sum = newAsyncHash()
		z.w = bufio.NewWriterSize(io.MultiWriter(f, z.crc, z.sum), copyBufferSize)
	} else {
		z.w = bufio.NewWriterSize(io.MultiWriter(f, z.crc), copyBufferSize)
	}
	return z
}

// copyInKernel has storeRead copy the bytes of a file stored (given
// with their SHA-256: rawSum.sha256) by the kernel, when the package is
// written to a file and its SHA-256 was not asked for (which needs
// every byte): it reports whether it will. The bytes copied are then
// compared with those read for their CRC-32 and SHA-256 only by a read
// of what was written, which the caller must make (Check with Written,
// as every rebuild is checked): a file that changed between the two
// reads leaves a member whose bytes do not have the CRC-32 its headers
// give, and a whole file without the CRC-32 written (Result.CRC32).
func (z *zipWriter) copyInKernel(out outFile) bool {
	f, ok := out.(*os.File)
	if ok && z.sum == nil {
		z.file = f
	}
	return z.file != nil
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
func (z *zipWriter) begin(m *Member) error { return z.beginCopy(m, false) }

// beginCopy is begin for a member whose data descriptor, when it has
// one, is copied from the package it comes from (srcDescriptor: a
// descriptor of m follows its data there; copyMember).
//
// Its local extra fields are kept as they were, so that a member
// copied unchanged keeps its offset and so do the members after it (a
// crawl index has records at those offsets). A ZIP64 field there (some
// writers add one to every member, however small) is kept at its
// place and length: without a data descriptor it gets m's sizes, the
// local header's 0xFFFFFFFF (APPNOTE 4.5.3) or the sizes themselves as
// the source had them; with a descriptor it is kept as the streaming
// writer left it (zeros: it says that the descriptor has 8-byte
// sizes). A member whose data is written anew keeps it too, with its
// new sizes: the package stays in its writer's form, and an undo that
// puts the old data back puts it back where it was.
func (z *zipWriter) beginCopy(m *Member, srcDescriptor bool) error {
	if len(m.Name) > uint16max {
		return fmt.Errorf("member name of %d bytes", len(m.Name))
	}
	if !isASCII(m.Name) && utf8.ValidString(m.Name) {
		m.Flags |= flagUTF8
	}
	m.HeaderOffset = z.off
	m.Extra = dropExtra(m.Extra, zip64ExtraID)
	big := m.Size >= uint32max || m.CompressedSize >= uint32max
	desc := m.Flags&flagDescriptor != 0
	z64, hasZ64 := findExtra(m.LocalExtra, zip64ExtraID)
	if desc && big && !hasZ64 && !srcDescriptor {
		// A descriptor's sizes cannot say it without a ZIP64 field in
		// the local header: written with its sizes there instead. (One
		// copied says them in 8 bytes, as Go's archive/zip writes a
		// streamed member past 4 GiB, APPNOTE 4.3.9.2: kept, with the
		// local header, so that nothing after it moves.)
		desc = false
		m.Flags &^= flagDescriptor
	}
	m.ZIP64 = big || m.HeaderOffset >= uint32max
	local := bytes.Clone(m.LocalExtra)
	sizes64 := false // the local header's sizes are in its ZIP64 field
	if !desc {
		switch {
		case hasZ64 && len(z64) >= 16:
			at := extraAt(local, zip64ExtraID)
			binary.LittleEndian.PutUint64(local[at:], uint64(m.Size))
			binary.LittleEndian.PutUint64(local[at+8:], uint64(m.CompressedSize))
			sizes64 = big || m.localSizes64
		case big:
			// None, or one too short to say both sizes: a new one
			// first.
			local = dropExtra(local, zip64ExtraID)
			var f [20]byte
			binary.LittleEndian.PutUint16(f[0:], zip64ExtraID)
			binary.LittleEndian.PutUint16(f[2:], 16)
			binary.LittleEndian.PutUint64(f[4:], uint64(m.Size))
			binary.LittleEndian.PutUint64(f[12:], uint64(m.CompressedSize))
			local = append(f[:], local...)
			sizes64 = true
		}
	}
	sizes64Before := m.localSizes64
	m.localSizes64 = sizes64
	if len(local) > uint16max {
		return errors.New("extra fields too long")
	}
	m.ReaderVersion = max(m.ReaderVersion, 20)
	if m.ZIP64 {
		m.ReaderVersion = max(m.ReaderVersion, 45)
	}
	// The local header's version needed is the central directory's,
	// or, for a member read from a package, what its local header said
	// (a streaming writer says 20 there, before it knows that the
	// member or its offset needs ZIP64 in the central directory), 45 if
	// its sizes are in its ZIP64 field now and were not there.
	version := m.ReaderVersion
	if m.localVersion != 0 {
		version = max(m.localVersion, 20)
		if sizes64 && !sizes64Before {
			version = max(version, 45)
		}
	}
	m.localVersion = version
	var h [localLen]byte
	binary.LittleEndian.PutUint32(h[0:], localSig)
	binary.LittleEndian.PutUint16(h[4:], version)
	binary.LittleEndian.PutUint16(h[6:], m.Flags)
	binary.LittleEndian.PutUint16(h[8:], m.Method)
	binary.LittleEndian.PutUint16(h[10:], m.ModifiedTime)
	binary.LittleEndian.PutUint16(h[12:], m.ModifiedDate)
	if !desc { // else zeros, the descriptor says them
		binary.LittleEndian.PutUint32(h[14:], m.CRC32)
		if sizes64 {
			binary.LittleEndian.PutUint64(h[18:], 1<<64-1)
		} else {
			binary.LittleEndian.PutUint32(h[18:], uint32(m.CompressedSize))
			binary.LittleEndian.PutUint32(h[22:], uint32(m.Size))
		}
	}
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

// extraAt is where the data of the first extra field of that id begins
// in extra; -1 if it has none.
func extraAt(extra []byte, id uint16) int {
	for at := 0; len(extra)-at >= 4; {
		tag, n := binary.LittleEndian.Uint16(extra[at:]), int(binary.LittleEndian.Uint16(extra[at+2:]))
		if len(extra)-at < 4+n {
			return -1
		}
		if tag == id {
			return at + 4
		}
		at += 4 + n
	}
	return -1
}

// copyMember writes m copied unchanged from raw, its data in the
// package it comes from (Package.Raw): local header, data and, if it
// has one, the data descriptor that follows its data there. A stored
// member of a package file is copied by the kernel when the package is
// written to a file that way (copyInKernel): its CRC-32 is its bytes',
// which the whole file's takes on as the ZIP gives it, and which the
// check of what was written compares with them.
func (z *zipWriter) copyMember(m *Member, raw *io.SectionReader) error {
	if err := z.beginCopy(m, m.Flags&flagDescriptor != 0 && sourceDescriptor(m, raw) != nil); err != nil {
		return err
	}
	if outer, off, n := raw.Outer(); z.file != nil && m.Method == Store && n == m.CompressedSize {
		if src, ok := outer.(*os.File); ok {
			if err := z.kernelCopy(m, src, off); err != nil {
				return err
			}
			if n := z.off - m.DataOffset; n != m.CompressedSize {
				return fmt.Errorf("%s: %d bytes, %d expected (the file changed?)", m.Name, n, m.CompressedSize)
			}
			z.crc.add(m.CRC32, m.CompressedSize)
			return z.descriptor(m, raw)
		}
	}
	return z.copyData(m, raw)
}

// sourceDescriptor is the data descriptor of m after its data in the
// package src is a section of; nil if none is there.
func sourceDescriptor(m *Member, src io.Reader) []byte {
	s, ok := src.(*io.SectionReader)
	if !ok {
		return nil
	}
	outer, off, n := s.Outer()
	var buf [24]byte
	got, _ := outer.ReadAt(buf[:], off+n)
	return matchDescriptor(buf[:got], m)
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
	return z.descriptor(m, r)
}

// descriptor writes m's data descriptor after its data, if it has one:
// the bytes that follow the data in the package it is copied from (src,
// a section of that package) when they are a descriptor of m, else
// the usual form (signature, CRC-32, sizes of 8 bytes when its local
// header has a ZIP64 field, else 4).
func (z *zipWriter) descriptor(m *Member, src io.Reader) error {
	if m.Flags&flagDescriptor == 0 {
		return nil
	}
	if d := sourceDescriptor(m, src); d != nil {
		z.write(d)
		return z.err()
	}
	_, z64 := findExtra(m.LocalExtra, zip64ExtraID)
	d := binary.LittleEndian.AppendUint32(nil, descriptorSig)
	d = binary.LittleEndian.AppendUint32(d, m.CRC32)
	if z64 {
		d = binary.LittleEndian.AppendUint64(d, uint64(m.CompressedSize))
		d = binary.LittleEndian.AppendUint64(d, uint64(m.Size))
	} else {
		d = binary.LittleEndian.AppendUint32(d, uint32(m.CompressedSize))
		d = binary.LittleEndian.AppendUint32(d, uint32(m.Size))
	}
	z.write(d)
	return z.err()
}

// descriptorSig begins a data descriptor (which it may also go without).
const descriptorSig = 0x08074b50

// matchDescriptor is the data descriptor of m at the start of b, in
// whichever of its four forms (with or without its signature, sizes of
// 4 or 8 bytes) says m's CRC-32 and sizes; nil if none does. The
// longer forms are tried first, so that a descriptor whose 4-byte
// sizes happen to begin what would be 8-byte ones is not taken short.
func matchDescriptor(b []byte, m *Member) []byte {
	for _, f := range []struct {
		sig  bool
		wide bool
	}{{true, true}, {false, true}, {true, false}, {false, false}} {
		d := b
		if f.sig {
			if len(d) < 4 || binary.LittleEndian.Uint32(d) != descriptorSig {
				continue
			}
			d = d[4:]
		}
		n := 12
		if f.wide {
			n = 20
		}
		if len(d) < n || binary.LittleEndian.Uint32(d) != m.CRC32 {
			continue
		}
		var csize, size uint64
		if f.wide {
			csize, size = binary.LittleEndian.Uint64(d[4:]), binary.LittleEndian.Uint64(d[12:])
		} else {
			csize, size = uint64(binary.LittleEndian.Uint32(d[4:])), uint64(binary.LittleEndian.Uint32(d[8:]))
		}
		if csize == uint64(m.CompressedSize) && size == uint64(m.Size) {
			return b[:len(b)-len(d)+n]
		}
	}
	return nil
}

// storeFile writes the file f, from its start, as the stored member m
// (header and data): its size and CRC-32 (and, for a copy by the
// kernel, SHA-256) are read first, for the local header, then it is
// copied (storeRead). It returns the SHA-256.
func (z *zipWriter) storeFile(m *Member, f *os.File) ([]byte, error) {
	raw := newRawSummer(z.file != nil)
	if _, err := io.CopyBuffer(raw, io.NewSectionReader(f, 0, 1<<62), make([]byte, copyBufferSize)); err != nil {
		return nil, err
	}
	if z.beforeCopy != nil {
		z.beforeCopy(m.Name)
	}
	return z.storeRead(m, f, raw.sum())
}

// rawSum is the size and CRC-32 of a file's bytes as read, and their
// SHA-256 when it was taken (nil if not).
type rawSum struct {
	size   int64
	crc    uint32
	sha256 []byte
}

// rawSummer takes the size, CRC-32 and, if asked, SHA-256 of what is
// written to it: a file's bytes as read.
type rawSummer struct {
	n   int64
	crc uint32
	sha hash.Hash // nil if not asked for
}

func newRawSummer(withSHA256 bool) *rawSummer {
	s := &rawSummer{}
	if withSHA256 {
		s.sha = sha256.New()
	}
	return s
}

func (s *rawSummer) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
	if s.sha != nil {
		s.sha.Write(p)
	}
	return len(p), nil
}

func (s *rawSummer) sum() rawSum {
	rs := rawSum{size: s.n, crc: s.crc}
	if s.sha != nil {
		rs.sha256 = s.sha.Sum(nil)
	}
	return rs
}

// storeRead writes the file f, from its start, as the stored member m
// (header, data and, if m has one, data descriptor), its size and CRC-32
// being those of rs, which read it whole before (a first read, or the
// fresh index of a rebuild). It returns the SHA-256. With rs.sha256 and
// copyInKernel, the kernel copies the bytes (storeByKernel); else they
// are copied here with their SHA-256 (on another core) and CRC-32
// computed on the way, which must be the CRC-32 read before, and the
// SHA-256 if one was (else the file changed meanwhile, or the index was
// not made from the bytes written).
func (z *zipWriter) storeRead(m *Member, f *os.File, rs rawSum) ([]byte, error) {
	m.Method, m.Size, m.CompressedSize, m.CRC32 = Store, rs.size, rs.size, rs.crc
	if err := z.begin(m); err != nil {
		return nil, err
	}
	if z.file != nil && rs.sha256 != nil {
		return z.storeByKernel(m, f, rs)
	}
	crc := crc32.NewIEEE()
	sum := newAsyncHash()
	_, err := io.CopyBuffer(io.MultiWriter(z, crc, sum), io.NewSectionReader(f, 0, rs.size+1), make([]byte, copyBufferSize))
	digest := sum.Sum()
	if err != nil {
		return nil, err
	}
	if z.off-m.DataOffset != rs.size || crc.Sum32() != rs.crc {
		return nil, fmt.Errorf("%s: %s changed after it was read for its size and CRC-32 (%d bytes, CRC-32 %08x; read before: %d bytes, %08x)", m.Name, f.Name(), z.off-m.DataOffset, crc.Sum32(), rs.size, rs.crc)
	}
	if rs.sha256 != nil && !bytes.Equal(digest, rs.sha256) {
		// Taken before (Replacement.Sum), the SHA-256 proves what the
		// CRC-32 cannot: the bytes copied are those read then.
		return nil, fmt.Errorf("%s: %s changed after it was read for its size, CRC-32 and SHA-256 (SHA-256 %x; read before: %x)", m.Name, f.Name(), digest, rs.sha256)
	}
	if err := z.descriptor(m, nil); err != nil {
		return nil, err
	}
	return digest, nil
}

// storeByKernel writes m's data, whose header is written, copied from f
// by the kernel: copy_file_range ((*os.File).ReadFrom of a limited
// *os.File; f's own offset is the copy's, every other read of it reads
// at offsets), or the kernel's own fallback. Its size is checked here;
// its CRC-32 is the one rs read it with, which the whole file's takes
// on, and which a check of what was written compares with the bytes
// (copyInKernel): a file changed meanwhile is found there.
func (z *zipWriter) storeByKernel(m *Member, f *os.File, rs rawSum) ([]byte, error) {
	if err := z.kernelCopy(m, f, 0); err != nil {
		return nil, err
	}
	var one [1]byte
	more, err := f.ReadAt(one[:], rs.size)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if got := z.off - m.DataOffset; got != rs.size || more > 0 {
		state := fmt.Sprintf("%d bytes", got)
		if more > 0 {
			state = "more bytes"
		}
		return nil, fmt.Errorf("%s: %s changed after it was read for its size, CRC-32 and SHA-256 (%s now; read before: %d bytes)", m.Name, f.Name(), state, rs.size)
	}
	z.crc.add(rs.crc, rs.size)
	if err := z.descriptor(m, nil); err != nil {
		return nil, err
	}
	return rs.sha256, nil
}

// kernelCopy has the kernel copy m.CompressedSize bytes of src from
// offset off to the end of what was written (copyInKernel); fewer when
// src ends before, which the caller sees in z.off. src's own offset is
// the copy's: every other read of it reads at offsets.
func (z *zipWriter) kernelCopy(m *Member, src *os.File, off int64) error {
	if err := z.w.Flush(); err != nil {
		return err
	}
	if at, err := z.file.Seek(0, io.SeekCurrent); err != nil || at != z.off {
		return fmt.Errorf("%s: the package file is at offset %d (%v), %d bytes having been written to it", m.Name, at, err, z.off)
	}
	if _, err := src.Seek(off, io.SeekStart); err != nil {
		return err
	}
	n, err := z.file.ReadFrom(&io.LimitedReader{R: src, N: m.CompressedSize})
	z.off += n
	return err
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
