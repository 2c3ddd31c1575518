package rewritelog

import "os"

// Replacement is a file a rewrite replaced: its entries, as its section of
// the log holds them, and its two versions as the replacement left them.
// It is what a listing of the file's records needs to be carried over to
// the new version without reading it again (warcsum.Cache.Derive): the
// rewrite hands it over (refs.Rewriter.Replaced) once the new version is
// in place.
type Replacement struct {
	Name string // in the collection, unescaped (field 1's file)
	Path string // its real path
	// Old is the version read, as it was when it was replaced; New the new
	// version, renamed into place after the check that every byte of Old
	// is copied to it unchanged or replaced by an entry's record.
	Old, New os.FileInfo
	Entries  []Entry // the records written, in offset order
	// SHA256 is the new version's SHA-256 (hex), if the rewrite was asked
	// to take it (refs.Rewriter.SHA256: a crawl index records files by
	// it), else "" (the log's "# file" line has its BLAKE3, another hash).
	SHA256 string
	// CRC32 is the new version's CRC-32, taken with SHA256 by the
	// rewrite's check for the files it was asked to (refs.Rewriter.WantSums:
	// WACZ members' staged copies, which their package stores with
	// both); HasCRC32 says so.
	CRC32    uint32
	HasCRC32 bool
}
