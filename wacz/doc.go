// Package wacz reads, checks and writes WACZ packages (WACZ 1.0.0 and
// 1.1.1, as py-wacz, ArchiveWeb.page and the Browsertrix crawler write
// them), so that their WARC members can be deduplicated like WARC files.
//
// # What a package is
//
// A ZIP file: WARC files under archive/, stored (not compressed by the
// ZIP) so that replay tools read records by range; an index under
// indexes/, plain CDXJ (index.cdxj; ArchiveWeb.page's index.cdx) or
// ZipNum (index.cdx.gz, CDXJ in gzip blocks of the same number of lines,
// 256 by default, with index.idx: a "!meta" line, then each block's
// first "urlkey timestamp" and {"offset", "length", "digest",
// "filename"}); pages/pages.jsonl; datapackage.json, listing every file
// with its SHA-256 and size ("hash": "sha256:HEX", "bytes"; WACZ 1.0.0:
// "stats": {"hash", "bytes"}), wacz_version, created, modified, software,
// and for Browsertrix's crawl-time deduplication relation.requires:
// [{filename, hash, size, crawlId}]; datapackage-digest.json, the SHA-256
// of datapackage.json and, when signed, its signature (signedData).
//
// # Naming
//
// A WARC member is named outside its package as "PATH.wacz#MEMBER"
// (JoinName, SplitName): "2024-06.wacz#archive/data.warc.gz". Offsets
// and lengths given with such a name are the WARC member's own, as its
// package's index gives them; Package.Section reads the member by range
// (offset o of the member is Member.DataOffset+o of the package file),
// so the record readers work on it unchanged. The index names a member
// by its path after "archive/" (IndexName).
//
// # Reading
//
// Open reads the ZIP's own structure with a reader of its own (it sees
// every local header, which archive/zip hides): the end record (ZIP64
// records are read: Browsertrix writes packages past 4 GiB), the central
// directory, each local header, which must agree with it, no member
// overlapping another or running past the central directory, no data
// before or after the ZIP. A name that is no clean relative path ("..",
// ".", empty parts, absolute, a drive letter, NUL), a name twice, a WARC
// member compressed by the ZIP, an encrypted member or a compression
// method other than store and deflate, a ZIP spanning disks, a missing
// or malformed datapackage.json or datapackage-digest.json: each is an
// *Error naming the package and the member, of a kind errors.Is tells
// (ErrDamaged, ErrUnsafePath, ...). Open reads no member's bytes but the
// metadata's.
//
// Check reads the whole file once: each member's CRC-32, SHA-256 and
// size against the ZIP and datapackage.json, that datapackage.json lists
// exactly the members there are, datapackage-digest.json's hash (the
// signature itself is not verified), the whole file's SHA-256 (for
// fixity and requires entries), the index's structure (ZipNum blocks
// where index.idx says, each one gzip member with the digest given and
// the key of its first line, lines in byte order, every line naming a
// WARC member); with Records, every index line against the record at its
// offset (length, url, timestamp, mime, status, digest, urlkey,
// ArchiveWeb.page's recordDigest) and every record warcio.js indexes
// against its line, as package warcindex indexes it (warcio.js's own
// lines). Problems go in the Report, named.
//
// # Writing
//
// A Rebuild writes a new package beside the old one from replacement
// WARC members (files) and the old package: every other member's stored
// bytes copied as they are (compressed ones not recompressed), in the
// same order, with their names, times, attributes and extra fields; WARC
// members stored; the index brought up to date with the rewrite log's
// entries for the package (PackageMoves, LogUpdate: package reindex's
// updater, the one warccdx uses), every line keeping its indexer's
// spelling, and written in the form it had (the same ZipNum block size,
// !meta line and .idx fields), or written fresh with warcindex: from
// the lines a LineStore keeps of every WARC member (made from the hash
// stage's read of it, derived through the rewrite's entries for a
// rewritten copy, each stamped with the version it describes) when it
// has them all, else by reading the members;
// datapackage.json with the new hashes, sizes and "modified", every other
// key kept in its place and layout; datapackage-digest.json recomputed.
// A signed package is refused (ErrSigned) unless the signature is to go:
// it is then recorded in datapackage.json under "removedSignatures" with
// when, why and by what. An undo can put the old datapackage.json and
// digest back (signature included) when every member is again what they
// list. The ZIP writer puts sizes and CRC-32 in every local header (no
// data descriptors) and ZIP64 fields only where needed.
//
// Create writes a package of WARC files as Browsertrix lays one out
// (tests, warcgen). ReadCollection reads a multi-WACZ JSON
// ({"resources": [{name, path, hash, size, crawlId}]}). ContainerURI,
// RequirementOf and Order help a rewrite that makes revisits across
// packages: WARC-Refers-To-Container "file://NAME.wacz" on the revisit,
// the original's package in relation.requires with its current hash and
// size, packages rewritten after the packages they require.
package wacz
