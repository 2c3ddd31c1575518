// Package cdx reads and writes the capture indexes of web archives, one
// line per record: CDXJ and the space-separated CDX formats.
//
// # Formats
//
// CDXJ, as pywb's cdxj-indexer and warcio.js (`warcio cdx-index`) write
// it, is "urlkey timestamp {json}" with the record's url, mime, status,
// digest, length, offset and filename in the JSON object. Lines starting
// with "!" (ipwb's "!context", "!meta") are metadata.
//
// CDX is space-separated fields named by the letters of a header line
// " CDX N b a m s k r M S V g" (OpenWayback, IA, pywb). Without a header
// the layout follows the first record line's field count: 11 is
// "N b a m s k r M S V g", 10 "N b a m s k r M V g", 9 "N b a m s k r V g"
// (cdxj-indexer -9, NetarchiveSuite), 7 and 8 are NetarchiveSuite's ARC
// layout "A e b m n g v [c]", 14 is the 11 with pywb's three
// resolved-revisit fields when it ends like that (an offset, a file name,
// three more), and any other count above 11 is CDX11. A line with more fields
// than its layout has spaces in its original URL (warcio.js writes such
// URLs raw): the fields before the URL column are taken from the left,
// those after it from the right. The letters read are N (urlkey), b
// (timestamp), a (url; A when there is no a), m (mime), s (status), k
// (digest; c when there is no k), S (length; n when there is no S), V
// (offset; v when there is no V), g (filename); "-" is an absent value.
//
// Each line's format is detected on its own (OutbackCDX does the same), so
// concatenated indexes of both kinds read; Options.Format forces one.
// Input may be gzip, of one member or many (the end of a member ends a
// line: pywb's ZipNum blocks have no final newline).
//
// # Lines as read and as written
//
// A Line keeps its raw bytes. A Writer writes an unedited line byte for
// byte; an edited one (SetOffset, SetLength, SetMIME, SetDigest) is the raw
// line with only the edited values replaced, in the same format, field
// order and spelling: a CDXJ value keeps its quoting (the indexers write
// offset and length as JSON strings), and a key that was absent (a
// response without Content-Type has no "mime") is inserted where the
// indexers put it, in the order url, mime, status, digest, length, offset,
// filename, with the line's own separators (", " and ": " from Python's
// json.dumps, "," and ":" from JavaScript's JSON.stringify).
//
// # What the indexers write for a revisit
//
// Found in warcio.js 2.4.11 (lib/indexer.ts, lib/warcparser.ts) and
// checked by running it (e2e/warccdx_test.go), and in cdxj-indexer's
// main.py with Python warcio's indexer and record loader:
//
//   - mime is "warc/revisit" for every revisit record (both).
//   - status is the HTTP status of the revisit's block: both parse the
//     HTTP head of a revisit whose Content-Length is above 0, and a revisit
//     written by warcrefs keeps the response's head as its block, so the
//     status does not change.
//   - digest is WARC-Payload-Digest: warcio.js (CDXJ and CDX) and
//     cdxj-indexer's CDX modes write the part after "sha1:", cdxj-indexer's
//     CDXJ the whole value with its label. A record without the header gets
//     no digest from warcio.js and a computed one from cdxj-indexer.
//   - url, urlkey and timestamp come from WARC-Target-URI and WARC-Date,
//     which a revisit keeps; filename is the file's base name (both, unless
//     cdxj-indexer's --dir-root).
//   - offset and length are the record's bytes in the file as stored (its
//     gzip member). For an uncompressed file warcio.js leaves the record's
//     final CRLF CRLF out of the length, so the length of a rewritten
//     record moves by exactly what the rewrite log says it shrank, and the
//     records after it move by what the rewrites before them saved.
package cdx
