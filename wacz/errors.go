package wacz

import (
	"errors"
	"fmt"
)

// The kinds of bad input, wrapped in an *Error: test with errors.Is.
var (
	// ErrDamaged is a ZIP that cannot be read as one: no end record, a
	// central directory or local header that is not where it says or
	// disagrees with the other, members overlapping or running past the
	// central directory, a CRC-32 that does not match.
	ErrDamaged = errors.New("damaged ZIP")
	// ErrUnsupported is a ZIP this package does not read: spanning
	// several disks, encrypted members, a compression method other than
	// store and deflate.
	ErrUnsupported = errors.New("unsupported ZIP")
	// ErrDuplicate is a member name that appears twice.
	ErrDuplicate = errors.New("duplicate member name")
	// ErrUnsafePath is a member name that is no clean relative path
	// inside the package: absolute, with ".." or "." parts, empty parts,
	// a drive letter, a NUL byte.
	ErrUnsafePath = errors.New("member path leaves the package")
	// ErrCompressedWARC is a WARC member the ZIP compresses: replay tools
	// read records by range from the package, which needs them stored.
	ErrCompressedWARC = errors.New("WARC member compressed by the ZIP (it must be stored)")
	// ErrDatapackage is a datapackage.json that is missing, is no JSON
	// object, or lacks what a WACZ has there.
	ErrDatapackage = errors.New("bad datapackage.json")
	// ErrDigestFile is a datapackage-digest.json that is no JSON object
	// or names no SHA-256 of datapackage.json.
	ErrDigestFile = errors.New("bad datapackage-digest.json")
	// ErrHash is a member whose SHA-256 or size differs from what
	// datapackage.json says, or a datapackage.json whose SHA-256 differs
	// from datapackage-digest.json's.
	ErrHash = errors.New("hash mismatch")
	// ErrNotListed is a member that datapackage.json does not list, or a
	// resource it lists that the ZIP does not hold.
	ErrNotListed = errors.New("member and datapackage.json disagree")
	// ErrIndex is an index that does not describe the WARC members: a
	// line whose record is not there or differs, a record without a line,
	// lines out of order, a ZipNum block that is not where index.idx says.
	ErrIndex = errors.New("index does not match the WARC members")
	// ErrSigned is a signed package that a rewrite would invalidate.
	ErrSigned = errors.New("signed package")
)

// Error is bad input in a package, naming the package and, where there is
// one, the member, and a byte offset in the package file (-1 if none).
type Error struct {
	Package string
	Member  string
	Offset  int64
	Err     error
}

func (e *Error) Error() string {
	s := e.Package
	if e.Member != "" {
		s += ": " + e.Member
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(": offset %d", e.Offset)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// errorf makes an *Error of kind (a sentinel above) with a message.
func errorf(pkg, member string, offset int64, kind error, format string, args ...any) *Error {
	return &Error{Package: pkg, Member: member, Offset: offset, Err: fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))}
}
