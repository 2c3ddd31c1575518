// Package warcindex indexes the records of a WARC file as warcio.js
// 2.x `cdx-index` does (the indexer of ArchiveWeb.page and the Browsertrix
// crawler, whose WACZ packages hold its CDXJ): one Entry per record
// replay tools look up, with the fields and spelling of its CDXJ lines.
//
// Which records: every one but request and warcinfo records, and
// metadata and resource records of Content-Type application/warc-fields.
// A response (or revisit) next to a request with the same target URI is
// indexed once, with the request's method: a request other than GET adds
// its body to the URL as a query (form fields as they are, JSON as form
// fields, anything else base64) and to the line as requestBody.
//
// The fields: urlkey (SURT of the URL), timestamp (the first 14 digits
// of WARC-Date), url (WARC-Target-URI as written), mime ("warc/revisit"
// for a revisit, the HTTP Content-Type before any ";" for a response, the
// WARC Content-Type otherwise), status (the HTTP status of a response or
// revisit that has an HTTP head), digest (WARC-Payload-Digest after its
// "algo:" label), length and offset (the record as stored: its gzip
// member, or in a plain file its header and block without the CRLF CRLF
// after it), filename. An absent value leaves its key out.
package warcindex

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"warcdedup/record"
)

// Entry is one record's index line.
type Entry struct {
	URLKey    string
	Timestamp string
	URL       string
	Mime      string
	Status    string
	Digest    string
	Length    int64
	Offset    int64
	Filename  string
	// Method and RequestBody are set for a response paired with a request
	// other than GET.
	Method, RequestBody string
	// Has tells which of URL, Mime, Status and Digest the line holds.
	HasURL, HasMime, HasStatus, HasDigest bool

	// What the line was made from, for checks of other indexers' lines.
	Type          string // WARC-Type, lower case
	Date          string // WARC-Date as written
	PayloadDigest string // WARC-Payload-Digest as written
}

// AppendCDXJ appends the entry's CDXJ line as warcio.js writes it,
// without a line end.
func (e *Entry) AppendCDXJ(dst []byte) []byte {
	dst = append(dst, e.URLKey...)
	dst = append(dst, ' ')
	dst = append(dst, e.Timestamp...)
	dst = append(dst, ' ', '{')
	first := true
	field := func(name, value string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
		dst = appendJSString(dst, value)
	}
	if e.HasURL {
		field("url", e.URL)
	}
	if e.HasMime {
		field("mime", e.Mime)
	}
	if e.HasStatus {
		field("status", e.Status)
	}
	if e.HasDigest {
		field("digest", e.Digest)
	}
	field("length", strconv.FormatInt(e.Length, 10))
	field("offset", strconv.FormatInt(e.Offset, 10))
	field("filename", e.Filename)
	if e.Method != "" {
		field("method", e.Method)
	}
	if e.RequestBody != "" {
		field("requestBody", e.RequestBody)
	}
	return append(dst, '}')
}

// facts is what the indexer keeps of a record until it knows whether a
// request pairs with it.
type facts struct {
	typ, uri, date, contentType, payloadDigest string
	hasURI, hasDate, hasContentType            bool
	offset, length                             int64
	parse                                      bool   // the block is read as HTTP
	http                                       bool   // an HTTP head was parsed
	status                                     string // as warcio.js's Number() gives it
	httpContentType                            string // every Content-Type value, joined with ", "
	method                                     string // a request's
	body                                       []byte // a request's body, other than GET
}

// maxRequestBody is how much of a request's body is kept to index a
// POST: warcio.js keeps all of it, but at most 4096 characters of what it
// becomes reach the index, and a body larger than this is JSON or form
// data no crawler sends.
const maxRequestBody = 1 << 20

// Index reads the WARC file r, named filename in its lines and in
// errors, and calls emit with each entry in file order. A damaged record
// ends the index with an error naming the file and offset.
func Index(r io.Reader, filename string, emit func(*Entry) error) error {
	return IndexWith(r, filename, Options{}, emit)
}

// Options are the choices of IndexWith.
type Options struct {
	// Skipped, if set, is called with each record warcio.js writes no
	// line for (requests, warcinfo, and the like): an Entry with its
	// offset, length, type, URL and date, for checks of indexes whose
	// writers index more.
	Skipped func(*Entry) error
}

// IndexWith is Index with options.
func IndexWith(r io.Reader, filename string, opt Options, emit func(*Entry) error) error {
	rr, err := record.NewReader(r, filename)
	if err != nil {
		return err
	}
	ix := indexer{filename: filename, emit: emit, skipped: opt.Skipped}
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if rec.Format != record.WARC {
			return fmt.Errorf("%s: offset %d: not a WARC record", filename, rec.Offset)
		}
		f, err := readFacts(rr, rec)
		if err != nil {
			return err
		}
		if err := ix.add(f); err != nil {
			return err
		}
	}
	return ix.flush()
}

// readFacts reads what the index needs of the current record and
// finishes it.
func readFacts(rr *record.Reader, rec *record.Record) (*facts, error) {
	f, err := beginFacts(rr, rec, nil)
	if err != nil {
		return nil, err
	}
	if err := rr.Finish(); err != nil {
		return nil, err
	}
	f.end(rr, rec)
	return f, nil
}

// beginFacts reads what the index needs of the current record before its
// block is read by anyone else: its header's fields, and the HTTP head
// (and a request's body) from the start of its block. head, if not nil,
// is the HTTP head of a response read already by another reader of the
// record (ReadHTTPHead, which cannot be called twice), taken in place of
// reading it.
func beginFacts(rr *record.Reader, rec *record.Record, head *record.HTTPHead) (*facts, error) {
	f := &facts{typ: rec.Type, offset: rec.Offset}
	f.uri, f.hasURI = rec.Header.Lookup("WARC-Target-URI")
	if len(f.uri) >= 2 && f.uri[0] == '<' && f.uri[len(f.uri)-1] == '>' {
		f.uri = f.uri[1 : len(f.uri)-1] // wget 1.14's wrapper, which warcio.js removes
	}
	f.date, f.hasDate = rec.Header.Lookup("WARC-Date")
	f.contentType, f.hasContentType = rec.Header.Lookup("Content-Type")
	f.payloadDigest = rec.Header.Get("WARC-Payload-Digest")
	f.parse = rec.Type == "response" || rec.Type == "request" || rec.Type == "revisit" && rec.BlockLength > 0
	if f.parse && rec.BlockLength > 0 {
		if err := f.readHTTP(rr, rec, head); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// end takes the record's length once it is finished.
func (f *facts) end(rr *record.Reader, rec *record.Record) {
	switch {
	case rr.Compressed():
		f.length = rec.Length
	case f.parse && rec.BlockLength == 0:
		// warcio.js reads an HTTP head from an empty block all the same:
		// the first line after it, which its length then counts.
		trailer, _ := rr.Trailer()
		n := int64(len(trailer))
		if i := bytes.IndexByte(trailer, '\n'); i >= 0 {
			n = int64(i + 1)
		}
		f.length = rec.HeaderLength + n
	default:
		f.length = rec.HeaderLength + rec.BlockLength
	}
}

// readHTTP reads the HTTP head at the start of the block as warcio.js
// does: the first line is the status (or request) line, header lines
// follow up to an empty line. read, if not nil, is the response's head
// as ReadHTTPHead read it already.
func (f *facts) readHTTP(rr *record.Reader, rec *record.Record, read *record.HTTPHead) error {
	var head []byte
	if rec.Type != "request" {
		h := read
		if h == nil {
			var err error
			if h, err = rr.ReadHTTPHead(); err != nil {
				return err
			}
		}
		if h.Status != 0 {
			head = h.Raw
		}
	}
	if head == nil {
		var err error
		if head, err = readHead(rr, min(rec.BlockLength, maxHead)); err != nil {
			return err
		}
	}
	lines := strings.Split(strings.TrimRight(string(head), "\r\n"), "\n")
	statusLine := strings.TrimRight(lines[0], "\r")
	f.http = true
	first, rest, found := strings.Cut(statusLine, " ")
	if rec.Type == "request" {
		f.method = first
	} else if found {
		code, _, _ := strings.Cut(rest, " ")
		f.status = jsNumberOf(code)
	}
	var cts []string
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "content-type") {
			cts = append(cts, strings.TrimSpace(value))
		}
	}
	f.httpContentType = strings.Join(cts, ", ")
	if rec.Type == "request" && f.method != "GET" {
		body, err := io.ReadAll(io.LimitReader(rr, maxRequestBody))
		if err != nil {
			return err
		}
		f.body = body
	}
	return nil
}

// maxHead bounds the head of a block that is no HTTP response.
const maxHead = 1 << 20

// readHead reads the block up to and including its first empty line, or
// limit bytes.
func readHead(rr *record.Reader, limit int64) ([]byte, error) {
	var head []byte
	var c [1]byte
	for int64(len(head)) < limit {
		n, err := rr.Read(c[:])
		if n > 0 {
			head = append(head, c[0])
			if c[0] == '\n' && (bytes.HasSuffix(head, []byte("\n\n")) || bytes.HasSuffix(head, []byte("\n\r\n"))) {
				break
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return head, nil
}

// jsNumberOf is JavaScript's String(Number(s)) for a status code.
func jsNumberOf(s string) string {
	t := strings.TrimSpace(s)
	if t == "" {
		return "0"
	}
	if strings.Trim(t, "0123456789") == "" {
		n, err := strconv.ParseUint(t, 10, 64)
		if err == nil && n < 1<<53 {
			return strconv.FormatUint(n, 10)
		}
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil && !strings.ContainsAny(t, "_xXpPiInN") {
		return jsNumber(t)
	}
	return "NaN"
}

// indexer pairs responses with requests as warcio.js's CDXIndexer does.
type indexer struct {
	filename string
	emit     func(*Entry) error
	skipped  func(*Entry) error
	last     *facts
}

func (ix *indexer) add(f *facts) error {
	last := ix.last
	ix.last = f
	if last == nil {
		return nil
	}
	if last.uri != f.uri || last.hasURI != f.hasURI {
		return ix.index(last, nil)
	}
	switch {
	case f.typ == "request" && (last.typ == "response" || last.typ == "revisit"):
		ix.last = nil
		return ix.index(last, f)
	case (f.typ == "response" || f.typ == "revisit") && last.typ == "request":
		ix.last = nil
		return ix.index(f, last)
	}
	return ix.index(last, nil)
}

func (ix *indexer) flush() error {
	if ix.last == nil {
		return nil
	}
	last := ix.last
	ix.last = nil
	return ix.index(last, nil)
}

// indexed reports whether warcio.js writes a line for a record of this
// type.
func (f *facts) indexed() bool {
	switch f.typ {
	case "request", "warcinfo":
		return false
	case "metadata", "resource":
		return f.contentType != "application/warc-fields"
	}
	return true
}

func (ix *indexer) index(f, req *facts) error {
	if req != nil && ix.skipped != nil {
		if err := ix.skip(req); err != nil {
			return err
		}
	}
	if !f.indexed() {
		if ix.skipped != nil {
			return ix.skip(f)
		}
		return nil
	}
	e := &Entry{Offset: f.offset, Length: f.length, Filename: ix.filename, Type: f.typ, Date: f.date, PayloadDigest: f.payloadDigest}
	url := f.uri
	if req != nil && req.http && req.method != "GET" {
		e.Method = req.method
		body, query := postQuery(req.httpContentType, req.body)
		e.RequestBody = body
		url = appendRequestQuery(url, query, req.method)
	}
	e.URLKey = "undefined" // what warcio.js writes for a record without a URI
	if url != "" {
		e.URLKey = SURT(url)
	}
	e.Timestamp = timestamp(f.date)
	if f.hasURI {
		e.URL, e.HasURL = f.uri, true
	}
	switch f.typ {
	case "revisit":
		e.Mime, e.HasMime = "warc/revisit", true
	case "response", "request":
		if f.httpContentType != "" {
			m, _, _ := strings.Cut(f.httpContentType, ";")
			e.Mime, e.HasMime = strings.TrimSpace(m), true
		}
	default:
		e.Mime, e.HasMime = f.contentType, f.hasContentType
	}
	if f.http && (f.typ == "response" || f.typ == "revisit") {
		e.Status, e.HasStatus = f.status, true
	}
	if _, d, ok := strings.Cut(f.payloadDigest, ":"); ok {
		e.Digest, e.HasDigest = d, true
	}
	return ix.emit(e)
}

func (ix *indexer) skip(f *facts) error {
	return ix.skipped(&Entry{Offset: f.offset, Length: f.length, Filename: ix.filename, Type: f.typ, Date: f.date,
		URL: f.uri, HasURL: f.hasURI, PayloadDigest: f.payloadDigest})
}

// timestamp is a WARC-Date as a CDXJ line's timestamp: without its "-",
// ":" and "T", its first 14 characters (warcio.js's). Made here, not by a
// strings.Replacer: one built for each record cost the hash stage of a
// WACZ collection a tenth of its indexing.
func timestamp(date string) string {
	var b [14]byte
	n := 0
	for i := 0; i < len(date) && n < len(b); i++ {
		switch c := date[i]; c {
		case '-', ':', 'T':
		default:
			b[n] = c
			n++
		}
	}
	return string(b[:n])
}
