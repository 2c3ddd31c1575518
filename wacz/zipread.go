package wacz

import (
	"encoding/binary"
	"io"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// The ZIP record signatures and sizes (APPNOTE 6.3.10).
const (
	localSig       = 0x04034b50
	centralSig     = 0x02014b50
	endSig         = 0x06054b50
	end64Sig       = 0x06064b50
	end64LocSig    = 0x07064b50
	localLen       = 30
	centralLen     = 46
	endLen         = 22
	end64LocLen    = 20
	end64Len       = 56
	zip64ExtraID   = 0x0001
	maxEndSearch   = endLen + 0xffff
	flagEncrypted  = 0x1
	flagDescriptor = 0x8
	flagUTF8       = 0x800
	uint32max      = 0xffffffff
	uint16max      = 0xffff
)

// The compression methods read.
const (
	Store   uint16 = 0
	Deflate uint16 = 8
)

// Member is one file of a package as its ZIP records describe it.
type Member struct {
	Name string
	// Method is Store or Deflate.
	Method uint16
	Flags  uint16
	CRC32  uint32
	// CompressedSize is the bytes stored, Size the bytes of the file.
	CompressedSize, Size int64
	// HeaderOffset is where its local header starts in the package,
	// DataOffset where its (compressed) bytes do: for a stored member a
	// byte at offset o of the file is at DataOffset+o in the package.
	HeaderOffset, DataOffset int64
	// Modified is the MS-DOS time and date of the central directory.
	ModifiedTime, ModifiedDate    uint16
	CreatorVersion, ReaderVersion uint16
	InternalAttrs                 uint16
	ExternalAttrs                 uint32
	// Extra are the extra fields of the central directory and of the
	// local header, as stored (ZIP64 fields included).
	Extra, LocalExtra []byte
	Comment           string
	// ZIP64 is set when its records use ZIP64 fields.
	ZIP64 bool
	// localSizes64 is set when its local header, without a data
	// descriptor, says its sizes in its ZIP64 field (0xFFFFFFFF in the
	// header's): a rebuild writes it again in that form.
	localSizes64 bool
	// localVersion is the version needed to extract its local header
	// says (0 for a member not read from a package): a copy keeps it.
	localVersion uint16
}

// IsDir reports whether the member is a directory entry.
func (m *Member) IsDir() bool { return strings.HasSuffix(m.Name, "/") }

// IsArchive reports whether the member is a WARC (or ARC) file of the
// package: a file under "archive/".
func (m *Member) IsArchive() bool { return strings.HasPrefix(m.Name, "archive/") && !m.IsDir() }

// Modified is the member's modification time (MS-DOS, local time taken
// as UTC).
func (m *Member) Modified() time.Time {
	d, t := m.ModifiedDate, m.ModifiedTime
	return time.Date(int(d>>9)+1980, time.Month(d>>5&0xf), int(d&0x1f), int(t>>11), int(t>>5&0x3f), int(t&0x1f)*2, 0, time.UTC)
}

// zipDir is the directory of a ZIP file.
type zipDir struct {
	members       []*Member
	comment       []byte
	centralOffset int64 // where the central directory starts
	centralEnd    int64 // where it ends
	zip64         bool
	endOffset     int64 // of the end of central directory record
}

// readDir reads the central directory of the ZIP r of size bytes, and
// every member's local header, checking that they agree, that no member
// overlaps another, and every name.
func readDir(r io.ReaderAt, size int64, pkg string) (*zipDir, error) {
	dr := &dirReader{r: r, size: size, pkg: pkg}
	if err := dr.readEnd(); err != nil {
		return nil, err
	}
	if err := dr.readEnd64(); err != nil {
		return nil, err
	}
	if err := dr.checkEnd(); err != nil {
		return nil, err
	}
	if err := dr.readCentral(); err != nil {
		return nil, err
	}
	if err := dr.d.readLocalHeaders(r, pkg); err != nil {
		return nil, err
	}
	return dr.d, nil
}

// dirReader is one reading of a ZIP's directory, in the order readDir
// runs its steps: the end record, the ZIP64 end record that replaces its
// values, their checks against the file, then the central directory's
// entries.
type dirReader struct {
	r    io.ReaderAt
	size int64
	pkg  string
	d    *zipDir
	// What the end record (or the ZIP64 one) says.
	disk, cdDisk         uint32
	entriesDisk, entries uint64
	cdSize, cdOffset     uint64
	cdEnd                int64 // where the central directory must end
	seen                 map[string]bool
}

// damaged is an ErrDamaged error of the package at off (-1 for none).
func (dr *dirReader) damaged(off int64, format string, args ...any) error {
	return errorf(dr.pkg, "", off, ErrDamaged, format, args...)
}

// readEnd finds the end record, the last signature whose comment
// reaches the end of the file, and takes its values.
func (dr *dirReader) readEnd() error {
	search := min(dr.size, maxEndSearch)
	if search < endLen {
		return dr.damaged(-1, "%d bytes: too short for a ZIP", dr.size)
	}
	tail := make([]byte, search)
	if _, err := dr.r.ReadAt(tail, dr.size-search); err != nil {
		return errorf(dr.pkg, "", -1, ErrDamaged, "reading its end: %v", err)
	}
	endAt := -1
	for i := len(tail) - endLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) == endSig {
			if n := int(binary.LittleEndian.Uint16(tail[i+20:])); i+endLen+n == len(tail) {
				endAt = i
				break
			}
		}
	}
	if endAt < 0 {
		return dr.damaged(-1, "no end of central directory record (a truncated or non-ZIP file)")
	}
	dr.d = &zipDir{endOffset: dr.size - search + int64(endAt)}
	e := tail[endAt:]
	dr.disk, dr.cdDisk = uint32(binary.LittleEndian.Uint16(e[4:])), uint32(binary.LittleEndian.Uint16(e[6:]))
	dr.entriesDisk, dr.entries = uint64(binary.LittleEndian.Uint16(e[8:])), uint64(binary.LittleEndian.Uint16(e[10:]))
	dr.cdSize, dr.cdOffset = uint64(binary.LittleEndian.Uint32(e[12:])), uint64(binary.LittleEndian.Uint32(e[16:]))
	dr.d.comment = append([]byte(nil), e[endLen:]...)
	dr.cdEnd = dr.d.endOffset
	return nil
}

// readEnd64 reads the ZIP64 end record when a ZIP64 locator just before
// the end record points at one: its values replace the end record's.
func (dr *dirReader) readEnd64() error {
	d := dr.d
	if d.endOffset < end64LocLen {
		return nil
	}
	var loc [end64LocLen]byte
	if _, err := dr.r.ReadAt(loc[:], d.endOffset-end64LocLen); err != nil || binary.LittleEndian.Uint32(loc[:]) != end64LocSig {
		return nil // no locator: a ZIP without ZIP64 end records
	}
	d.zip64 = true
	if binary.LittleEndian.Uint32(loc[4:]) != 0 || binary.LittleEndian.Uint32(loc[16:]) > 1 {
		return errorf(dr.pkg, "", -1, ErrUnsupported, "a ZIP spanning several disks")
	}
	at := int64(binary.LittleEndian.Uint64(loc[8:]))
	var e64 [end64Len]byte
	if at < 0 || at+end64Len > d.endOffset-end64LocLen {
		return dr.damaged(d.endOffset-end64LocLen, "ZIP64 end record offset %d is outside the file", at)
	}
	if _, err := dr.r.ReadAt(e64[:], at); err != nil || binary.LittleEndian.Uint32(e64[:]) != end64Sig {
		return dr.damaged(at, "no ZIP64 end of central directory record where the locator says")
	}
	if recLen := binary.LittleEndian.Uint64(e64[4:]); recLen < end64Len-12 || int64(recLen) != d.endOffset-end64LocLen-at-12 {
		return dr.damaged(at, "ZIP64 end record of %d bytes does not end at the locator", recLen)
	}
	disk64, cdDisk64 := binary.LittleEndian.Uint32(e64[16:]), binary.LittleEndian.Uint32(e64[20:])
	if disk64 != 0 || cdDisk64 != 0 {
		return errorf(dr.pkg, "", -1, ErrUnsupported, "a ZIP spanning several disks")
	}
	dr.entriesDisk, dr.entries = binary.LittleEndian.Uint64(e64[24:]), binary.LittleEndian.Uint64(e64[32:])
	dr.cdSize, dr.cdOffset = binary.LittleEndian.Uint64(e64[40:]), binary.LittleEndian.Uint64(e64[48:])
	dr.disk, dr.cdDisk = 0, 0
	dr.cdEnd = at
	return nil
}

// checkEnd refuses end values that do not describe one central directory
// on one disk, ending where the end records start, before reading it.
func (dr *dirReader) checkEnd() error {
	if dr.disk != 0 || dr.cdDisk != 0 || dr.entriesDisk != dr.entries {
		return errorf(dr.pkg, "", -1, ErrUnsupported, "a ZIP spanning several disks")
	}
	if dr.cdOffset > uint64(dr.cdEnd) || dr.cdSize != uint64(dr.cdEnd)-dr.cdOffset {
		return dr.damaged(dr.d.endOffset, "the central directory (%d bytes at %d) does not end where the end record is (%d): data before or after the ZIP, or a damaged end record", dr.cdSize, dr.cdOffset, dr.cdEnd)
	}
	// An entry takes at least centralLen bytes: this bounds what
	// readCentral allocates by the directory's bytes, not by a count a
	// damaged record claims.
	if dr.entries > dr.cdSize/centralLen {
		return dr.damaged(dr.d.endOffset, "%d entries cannot fit a central directory of %d bytes", dr.entries, dr.cdSize)
	}
	dr.d.centralOffset, dr.d.centralEnd = int64(dr.cdOffset), dr.cdEnd
	return nil
}

// readCentral reads the central directory and each of its entries, which
// must fill it exactly.
func (dr *dirReader) readCentral() error {
	cd := make([]byte, dr.cdSize)
	if _, err := dr.r.ReadAt(cd, int64(dr.cdOffset)); err != nil {
		return dr.damaged(int64(dr.cdOffset), "reading the central directory: %v", err)
	}
	dr.seen = make(map[string]bool, dr.entries)
	pos := 0
	for i := uint64(0); i < dr.entries; i++ {
		m, n, err := dr.entry(cd[pos:], int64(dr.cdOffset)+int64(pos), i)
		if err != nil {
			return err
		}
		pos += n
		dr.d.members = append(dr.d.members, m)
	}
	if pos != len(cd) {
		return dr.damaged(int64(dr.cdOffset)+int64(pos), "%d bytes of the central directory after its %d entries", len(cd)-pos, dr.entries)
	}
	// A ZIP64 end record makes every member a ZIP64 one: a rebuild
	// writes them all again in that form.
	if dr.d.zip64 {
		for _, m := range dr.d.members {
			m.ZIP64 = true
		}
	}
	return nil
}

// entry reads central directory entry i (counted from 0) from h, at
// offset at of the file, and returns its member and its length.
func (dr *dirReader) entry(h []byte, at int64, i uint64) (*Member, int, error) {
	if len(h) < centralLen || binary.LittleEndian.Uint32(h) != centralSig {
		return nil, 0, dr.damaged(at, "central directory entry %d of %d is not there", i+1, dr.entries)
	}
	nameLen, extraLen, commentLen := int(binary.LittleEndian.Uint16(h[28:])), int(binary.LittleEndian.Uint16(h[30:])), int(binary.LittleEndian.Uint16(h[32:]))
	if len(h) < centralLen+nameLen+extraLen+commentLen {
		return nil, 0, dr.damaged(at, "central directory entry %d runs past the directory", i+1)
	}
	m := &Member{
		CreatorVersion: binary.LittleEndian.Uint16(h[4:]),
		ReaderVersion:  binary.LittleEndian.Uint16(h[6:]),
		Flags:          binary.LittleEndian.Uint16(h[8:]),
		Method:         binary.LittleEndian.Uint16(h[10:]),
		ModifiedTime:   binary.LittleEndian.Uint16(h[12:]),
		ModifiedDate:   binary.LittleEndian.Uint16(h[14:]),
		CRC32:          binary.LittleEndian.Uint32(h[16:]),
		InternalAttrs:  binary.LittleEndian.Uint16(h[36:]),
		ExternalAttrs:  binary.LittleEndian.Uint32(h[38:]),
		Name:           string(h[centralLen : centralLen+nameLen]),
		Extra:          append([]byte(nil), h[centralLen+nameLen:centralLen+nameLen+extraLen]...),
		Comment:        string(h[centralLen+nameLen+extraLen : centralLen+nameLen+extraLen+commentLen]),
	}
	if err := dr.sizes(m, h, at); err != nil {
		return nil, 0, err
	}
	if err := dr.checkMember(m, at); err != nil {
		return nil, 0, err
	}
	return m, centralLen + nameLen + extraLen + commentLen, nil
}

// sizes sets m's sizes and header offset from its entry h, taking those
// the entry marks 0xFFFFFFFF from its ZIP64 extra field, in the order
// APPNOTE 4.5.3 gives them.
func (dr *dirReader) sizes(m *Member, h []byte, at int64) error {
	csize, usize := uint64(binary.LittleEndian.Uint32(h[20:])), uint64(binary.LittleEndian.Uint32(h[24:]))
	offset, diskStart := uint64(binary.LittleEndian.Uint32(h[42:])), uint32(binary.LittleEndian.Uint16(h[34:]))
	if z, ok := findExtra(m.Extra, zip64ExtraID); ok {
		m.ZIP64 = true
		for _, v := range []*uint64{&usize, &csize, &offset} {
			if *v == uint32max {
				if len(z) < 8 {
					return errorf(dr.pkg, m.Name, at, ErrDamaged, "ZIP64 extra field too short")
				}
				*v, z = binary.LittleEndian.Uint64(z), z[8:]
			}
		}
	} else if csize == uint32max || usize == uint32max || offset == uint32max {
		return errorf(dr.pkg, m.Name, at, ErrDamaged, "sizes or offset need a ZIP64 extra field it lacks")
	}
	if diskStart != 0 {
		return errorf(dr.pkg, m.Name, at, ErrUnsupported, "starts on disk %d", diskStart)
	}
	if csize > uint64(dr.size) || usize > 1<<62 || offset > uint64(dr.size) {
		return errorf(dr.pkg, m.Name, at, ErrDamaged, "sizes %d/%d or offset %d beyond the file", csize, usize, offset)
	}
	m.CompressedSize, m.Size, m.HeaderOffset = int64(csize), int64(usize), int64(offset)
	return nil
}

// checkMember refuses a member whose name is unsafe or taken, or which
// this package cannot read.
func (dr *dirReader) checkMember(m *Member, at int64) error {
	if err := checkName(m.Name, m.Flags); err != nil {
		return &Error{Package: dr.pkg, Member: m.Name, Offset: at, Err: err}
	}
	if dr.seen[m.Name] {
		return errorf(dr.pkg, m.Name, at, ErrDuplicate, "the ZIP holds two members of this name")
	}
	dr.seen[m.Name] = true
	switch {
	case m.Flags&flagEncrypted != 0:
		return errorf(dr.pkg, m.Name, at, ErrUnsupported, "encrypted")
	case m.Method != Store && m.Method != Deflate:
		return errorf(dr.pkg, m.Name, at, ErrUnsupported, "compression method %d (only stored and deflated members are read)", m.Method)
	case m.Method == Store && m.CompressedSize != m.Size:
		return errorf(dr.pkg, m.Name, at, ErrDamaged, "stored member of %d bytes holds %d", m.Size, m.CompressedSize)
	}
	return nil
}

// readLocalHeaders reads each member's local header, sets DataOffset and
// LocalExtra, and checks that the header agrees with the central
// directory and that the members' bytes lie one after the other before
// the central directory.
func (d *zipDir) readLocalHeaders(r io.ReaderAt, pkg string) error {
	for _, m := range d.members {
		var h [localLen]byte
		if m.HeaderOffset+localLen > d.centralOffset {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "local header offset %d is not before the central directory at %d", m.HeaderOffset, d.centralOffset)
		}
		if _, err := r.ReadAt(h[:], m.HeaderOffset); err != nil {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "reading its local header: %v", err)
		}
		if binary.LittleEndian.Uint32(h[:]) != localSig {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "no local header where the central directory says")
		}
		nameLen, extraLen := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
		if m.HeaderOffset+localLen+nameLen+extraLen > d.centralOffset {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "local header runs into the central directory")
		}
		ne := make([]byte, nameLen+extraLen)
		if _, err := r.ReadAt(ne, m.HeaderOffset+localLen); err != nil {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "reading its local header: %v", err)
		}
		if string(ne[:nameLen]) != m.Name {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "the local header names it %q", ne[:nameLen])
		}
		m.LocalExtra = ne[nameLen:]
		m.localVersion = binary.LittleEndian.Uint16(h[4:])
		method, flags := binary.LittleEndian.Uint16(h[8:]), binary.LittleEndian.Uint16(h[6:])
		if method != m.Method || flags&flagEncrypted != m.Flags&flagEncrypted {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "local header says method %d, the central directory %d", method, m.Method)
		}
		if flags&flagDescriptor == 0 {
			crc, csize, usize := binary.LittleEndian.Uint32(h[14:]), uint64(binary.LittleEndian.Uint32(h[18:])), uint64(binary.LittleEndian.Uint32(h[22:]))
			if z, ok := findExtra(m.LocalExtra, zip64ExtraID); ok && len(z) >= 16 && (csize == uint32max || usize == uint32max) {
				usize, csize = binary.LittleEndian.Uint64(z), binary.LittleEndian.Uint64(z[8:])
				m.localSizes64 = true
			}
			if crc != m.CRC32 || int64(csize) != m.CompressedSize || int64(usize) != m.Size {
				return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "local header says CRC-32 %08x, %d/%d bytes; the central directory %08x, %d/%d",
					crc, csize, usize, m.CRC32, m.CompressedSize, m.Size)
			}
		}
		m.DataOffset = m.HeaderOffset + localLen + nameLen + extraLen
		if m.DataOffset+m.CompressedSize > d.centralOffset {
			return errorf(pkg, m.Name, m.DataOffset, ErrDamaged, "its %d bytes run past the central directory at %d (a truncated package?)", m.CompressedSize, d.centralOffset)
		}
	}
	byOffset := append([]*Member(nil), d.members...)
	sort.Slice(byOffset, func(i, j int) bool { return byOffset[i].HeaderOffset < byOffset[j].HeaderOffset })
	for i := 1; i < len(byOffset); i++ {
		prev, m := byOffset[i-1], byOffset[i]
		if prev.DataOffset+prev.CompressedSize > m.HeaderOffset {
			return errorf(pkg, m.Name, m.HeaderOffset, ErrDamaged, "overlaps member %s", prev.Name)
		}
	}
	return nil
}

// findExtra returns the data of the first extra field of that id.
func findExtra(extra []byte, id uint16) ([]byte, bool) {
	for len(extra) >= 4 {
		tag, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra) < 4+n {
			return nil, false
		}
		if tag == id {
			return extra[4 : 4+n], true
		}
		extra = extra[4+n:]
	}
	return nil, false
}

// dropExtra returns extra without its fields of that id.
func dropExtra(extra []byte, id uint16) []byte {
	var out []byte
	for len(extra) >= 4 {
		tag, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra) < 4+n {
			return append(out, extra...)
		}
		if tag != id {
			out = append(out, extra[:4+n]...)
		}
		extra = extra[4+n:]
	}
	return append(out, extra...)
}

// checkName refuses a member name that is no clean relative path inside
// the package.
func checkName(name string, flags uint16) error {
	bad := func(why string) error { return &nameError{why: why} }
	switch {
	case name == "":
		return bad("empty name")
	case strings.IndexByte(name, 0) >= 0:
		return bad("a NUL byte in the name")
	case name[0] == '/' || name[0] == '\\':
		return bad("absolute path")
	case len(name) >= 2 && name[1] == ':' && ('a' <= name[0]|0x20 && name[0]|0x20 <= 'z'):
		return bad("a drive letter")
	case flags&flagUTF8 != 0 && !utf8.ValidString(name):
		return bad("marked UTF-8 but is not")
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		switch part {
		case "":
			return bad("an empty path element")
		case ".", "..":
			return bad(`a "` + part + `" path element`)
		}
	}
	if c := path.Clean(name); c != strings.TrimSuffix(name, "/") {
		return bad("not a clean path")
	}
	return nil
}

type nameError struct{ why string }

func (e *nameError) Error() string { return ErrUnsafePath.Error() + ": " + e.why }
func (e *nameError) Unwrap() error { return ErrUnsafePath }
