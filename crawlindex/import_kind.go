package crawlindex

import (
	"bytes"
	"fmt"
	"io"

	"warcdedup/manifest"
	"warcdedup/record"
)

// An index line says a capture is a 200 response, but indexers give that
// status to records that are none: jwarc's cdx tool gives every record it
// indexes that is no response (resource records among them) status 200;
// others index metadata and request records. Only an HTTP response can be
// an original (a run reads it as one, manifest.Line.CheckRecord), so the
// import takes no line whose URL no HTTP response has (httpCapture): the
// urn: resources of ArchiveWeb.page and Browsertrix (a page's text, its
// screenshot, its page info), the metadata:, dns: and ftp: records of
// wget and Heritrix. A line of an http: URL naming a resource or metadata
// record the line cannot show, nor can the import, which reads no WARC
// byte: the run that reads it leaves it out with a warning
// (stage.Resolve, NotResponse), as a record cut short.

// httpCapture reports whether url, a capture line's, can be an HTTP
// response's: it has no scheme (some indexes leave it out; "host:port"
// is no scheme), or http or https.
func httpCapture(url []byte) bool {
	i := 0
	for i < len(url) && url[i] != ':' {
		c := url[i]
		letter := 'a' <= c|0x20 && c|0x20 <= 'z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return true // no scheme
		}
		i++
	}
	if i == 0 || i == len(url) || i+1 < len(url) && '0' <= url[i+1] && url[i+1] <= '9' {
		return true // no colon, or a port follows it
	}
	scheme := url[:i]
	return bytes.EqualFold(scheme, []byte("http")) || bytes.EqualFold(scheme, []byte("https"))
}

// NoOriginal is why the record of length bytes at the start of what
// open returns (read afresh each call), named name, an imported crawl's
// original that did not read as the response its index line names, is
// no original: a response cut short (CutShort) or a record that is no
// HTTP response (NotResponse); "" if neither, a problem its operator
// must hear of. Resolve leaves such an original out with a warning, and
// index verify --deep notes it.
func NoOriginal(open func() io.Reader, name string, length int64) string {
	if why := CutShort(open(), name); why != "" {
		return why
	}
	return NotResponse(open(), name, length)
}

// NotResponse is what the record at the start of r, named name, is when
// it is a whole record of length bytes, alone in r, of a kind that is
// never an HTTP response, which an index line listed as a 200 capture
// (see above): "" for anything else (a response, a revisit, a warcinfo
// record, no record, damage, a record of another length), which stays a
// stale line. A revisit or warcinfo record where an original was is
// what a file changed since its crawl was committed shows, which its
// operator must hear of; an indexer listing one as a capture is unknown.
func NotResponse(r io.Reader, name string, length int64) string {
	rr, err := record.NewReader(r, name)
	if err != nil {
		return ""
	}
	rec, err := manifest.NextRecord(rr)
	if err != nil || rec.Offset != 0 {
		return ""
	}
	switch rec.Type {
	case "resource", "metadata", "request", "conversion":
	default:
		return ""
	}
	if err := (&manifest.Line{Length: length}).CheckEnd(rr, rec, true); err != nil {
		return ""
	}
	return fmt.Sprintf("a %q record, no HTTP response (its index line gave it a 200 status)", rec.Type)
}
