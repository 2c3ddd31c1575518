package gen

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"warcdedup/digest"
	"warcdedup/gzmulti"
	"warcdedup/manifest"
	"warcdedup/record"
)

// smallPayload is the largest payload generated once into memory; larger
// ones are generated twice, once for the digests the header needs and once
// for the bytes.
const smallPayload = 512 << 10

// identitySeed keys the 64-bit hash that tells payloads with the same
// manifest digest apart; any seed works as long as one run uses one.
var identitySeed = maphash.MakeSeed()

type fileOut struct {
	recs      []listedRec
	responses int
	size      int64
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// errWriter remembers the first error of w and drops later writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

type writer struct {
	ctx  context.Context
	p    *plan
	fp   *filePlan
	fi   int
	rng  *rand.Rand
	cw   countWriter
	zw   *gzmulti.Writer // a member per record in a .gz file
	out  errWriter       // the current record's destination: zw or cw
	out1 *fileOut

	buf      []byte      // generator buffer
	pbuf     sliceWriter // a small payload's bytes
	hdr      []byte
	httpHdr  []byte
	block    []byte
	sha1p    hash.Hash
	sha1b    hash.Hash
	algo     hash.Hash // nil when the manifest algorithm is sha1
	identity maphash.Hash

	warcinfoID string
	lastID     string // record ID and URI of the last response written
	lastURI    string
	first      struct { // the first listed response, for the revisit
		uri, date, payloadDigest string
		ok                       bool
	}
}

func writeFile(ctx context.Context, dir string, p *plan, fi int) (*fileOut, error) {
	fp := &p.files[fi]
	f, err := os.Create(filepath.Join(dir, fp.name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := &writer{
		ctx:   ctx,
		p:     p,
		fp:    fp,
		fi:    fi,
		rng:   rand.New(rand.NewPCG(uint64(p.cfg.Seed), 0x66696c65<<20|uint64(fi))),
		buf:   make([]byte, 64<<10),
		sha1p: sha1.New(),
		sha1b: sha1.New(),
		out1:  &fileOut{},
	}
	if p.cfg.Algorithm != digest.SHA1 {
		w.algo = p.cfg.Algorithm.New()
	}
	w.identity.SetSeed(identitySeed)
	w.cw.w = bufio.NewWriterSize(f, 1<<20)
	if fp.format.Gzip() {
		w.zw = gzmulti.NewWriter(&w.cw, gzip.DefaultCompression)
	}
	if err := w.writeAll(); err != nil {
		return nil, fmt.Errorf("%s: %w", fp.name, err)
	}
	if err := w.cw.w.Flush(); err != nil {
		return nil, err
	}
	w.out1.size = w.cw.n
	return w.out1, f.Close()
}

func (w *writer) writeAll() error {
	arc := w.fp.format.IsARC()
	if arc {
		if err := w.arcFiledesc(); err != nil {
			return err
		}
	} else if w.p.cfg.NonCandidates {
		if err := w.warcinfo(); err != nil {
			return err
		}
	}
	for i := range w.fp.items {
		if i%64 == 0 && w.ctx.Err() != nil {
			return w.ctx.Err()
		}
		it := &w.fp.items[i]
		var err error
		switch {
		case it.typ == itResource && arc:
			err = w.arcDNS(it)
		case it.typ == itResource:
			err = w.warcResource(it)
		case it.typ == itMetadata:
			err = w.warcMetadata(it)
		case it.typ == itRevisit:
			err = w.warcRevisit(it)
		case arc:
			err = w.arcResponse(it)
		default:
			err = w.warcResponse(it)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// begin starts a record (a new gzip member in a .gz file) and returns its offset.
func (w *writer) begin() int64 {
	start := w.cw.n
	if w.zw != nil {
		w.out = errWriter{w: w.zw}
	} else {
		w.out = errWriter{w: &w.cw}
	}
	return start
}

// end finishes the record begun at start and returns its stored length.
func (w *writer) end(start int64) (int64, error) {
	if w.out.err != nil {
		return 0, w.out.err
	}
	if w.zw != nil {
		if _, err := w.zw.CloseMember(); err != nil {
			return 0, err
		}
	}
	return w.cw.n - start, nil
}

func (w *writer) uuid() string {
	var b [16]byte
	hi, lo := w.rng.Uint64(), w.rng.Uint64()
	for i := range 8 {
		b[i], b[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return "<urn:uuid:" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + ">"
}

func warcDate(t int64) string { return time.Unix(t, 0).UTC().Format("2006-01-02T15:04:05Z") }
func arcDate(t int64) string  { return time.Unix(t, 0).UTC().Format("20060102150405") }

func sha1Label(h hash.Hash) string { return digest.SHA1.Format(h.Sum(nil)) }

func blockDigest(b ...[]byte) string {
	h := sha1.New()
	for _, p := range b {
		h.Write(p)
	}
	return sha1Label(h)
}

// --- WARC ---

func (w *writer) startHeader(typ, id, date string) {
	w.hdr = append(w.hdr[:0], "WARC/"...)
	w.hdr = append(w.hdr, w.fp.format.version()...)
	w.hdr = append(w.hdr, "\r\n"...)
	w.field("WARC-Type", typ)
	w.field("WARC-Record-ID", id)
	if w.warcinfoID != "" && typ != "warcinfo" {
		w.field("WARC-Warcinfo-ID", w.warcinfoID)
	}
	w.field("WARC-Date", date)
}

func (w *writer) field(name, value string) {
	w.hdr = append(w.hdr, name...)
	w.hdr = append(w.hdr, ": "...)
	w.hdr = append(w.hdr, value...)
	w.hdr = append(w.hdr, "\r\n"...)
}

// finishHeader adds Content-Length and the blank line.
func (w *writer) finishHeader(blockLen int64) {
	w.field("Content-Length", strconv.FormatInt(blockLen, 10))
	w.hdr = append(w.hdr, "\r\n"...)
}

// simpleRecord writes the header in w.hdr, then block, then CRLFCRLF.
func (w *writer) simpleRecord(block []byte) error {
	start := w.begin()
	w.out.Write(w.hdr)
	w.out.Write(block)
	w.out.Write([]byte("\r\n\r\n"))
	_, err := w.end(start)
	return err
}

func (w *writer) warcinfo() error {
	w.warcinfoID = ""
	id := w.uuid()
	ver := w.fp.format.version()
	block := fmt.Appendf(nil, "software: warcdedup-gen/1.0\r\nformat: WARC File Format %s\r\n"+
		"conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-%s/\r\n"+
		"isPartOf: %s-seed-%d\r\ndescription: synthetic test collection, not a real crawl\r\nrobots: ignore\r\n",
		ver, ver, w.p.cfg.Prefix, w.p.cfg.Seed)
	w.startHeader("warcinfo", id, warcDate(w.fp.start))
	w.field("WARC-Filename", w.fp.name)
	w.field("Content-Type", "application/warc-fields")
	w.field("WARC-Block-Digest", blockDigest(block))
	w.finishHeader(int64(len(block)))
	err := w.simpleRecord(block)
	w.warcinfoID = id
	return err
}

func (w *writer) warcResource(it *item) error {
	h := &w.p.hosts[it.host]
	block := fmt.Appendf(nil, "%s\n%s.\t300\tIN\tA\t%s\n", arcDate(it.date), h.name, h.ip)
	w.startHeader("resource", w.uuid(), warcDate(it.date))
	w.field("WARC-Target-URI", "dns:"+h.name)
	w.field("WARC-IP-Address", "192.0.2.53")
	w.field("Content-Type", "text/dns")
	w.field("WARC-Block-Digest", blockDigest(block))
	w.field("WARC-Payload-Digest", blockDigest(block))
	w.finishHeader(int64(len(block)))
	return w.simpleRecord(block)
}

func (w *writer) warcMetadata(it *item) error {
	block := fmt.Appendf(nil, "via: %s\r\nhopsFromSeed: L\r\nfetchTimeMs: %d\r\noutlink: %s/ L a/@href\r\n",
		w.lastURI, 20+w.rng.IntN(900), w.p.hosts[w.rng.IntN(len(w.p.hosts))].base)
	w.startHeader("metadata", w.uuid(), warcDate(it.date))
	w.field("WARC-Target-URI", w.lastURI)
	w.field("WARC-Concurrent-To", w.lastID)
	w.field("Content-Type", "application/warc-fields")
	w.field("WARC-Block-Digest", blockDigest(block))
	w.finishHeader(int64(len(block)))
	return w.simpleRecord(block)
}

func (w *writer) warcRevisit(it *item) error {
	if !w.first.ok {
		return nil
	}
	p := w.p.payloads[it.pay]
	w.httpHeader(p, it)
	ver := w.fp.format.version()
	w.startHeader("revisit", w.uuid(), warcDate(it.date))
	w.field("WARC-Target-URI", w.p.uri(it))
	w.field("WARC-IP-Address", w.p.hosts[it.host].ip)
	w.field("WARC-Profile", "http://netpreserve.org/warc/"+ver+"/revisit/identical-payload-digest")
	w.field("WARC-Refers-To-Target-URI", w.first.uri)
	w.field("WARC-Refers-To-Date", w.first.date)
	w.field("WARC-Payload-Digest", w.first.payloadDigest)
	w.field("WARC-Truncated", "length")
	w.field("Content-Type", "application/http; msgtype=response")
	w.field("WARC-Block-Digest", blockDigest(w.httpHdr))
	w.finishHeader(int64(len(w.httpHdr)))
	start := w.begin()
	w.out.Write(w.hdr)
	w.out.Write(w.httpHdr)
	w.out.Write([]byte("\r\n\r\n"))
	length, err := w.end(start)
	if err != nil {
		return err
	}
	w.revisitListed(w.p.uri(it), warcDate(it.date), w.first.uri, w.first.date, w.first.payloadDigest, start, length)
	return nil
}

var statusLines = map[itemType]string{
	itResponse:  "HTTP/1.1 200 OK",
	itTruncated: "HTTP/1.1 200 OK",
	it404:       "HTTP/1.1 404 Not Found",
	it301:       "HTTP/1.1 301 Moved Permanently",
	it206:       "HTTP/1.1 206 Partial Content",
}

// httpHeader builds the HTTP status line and headers, through the blank
// line, into w.httpHdr.
func (w *writer) httpHeader(p Payload, it *item) {
	h := &w.p.hosts[it.host]
	typ := it.typ
	if typ == itRevisit {
		typ = itResponse
	}
	status := statusLines[typ]
	if it.variant == nonAuthorative {
		status = "HTTP/1.1 203 Non-Authoritative Information"
	}
	b := append(w.httpHdr[:0], status...)
	b = append(b, "\r\nDate: "...)
	b = time.Unix(it.date, 0).UTC().AppendFormat(b, "Mon, 02 Jan 2006 15:04:05 GMT")
	b = append(b, "\r\nServer: "...)
	b = append(b, h.server...)
	b = append(b, "\r\nContent-Type: "...)
	if it.variant == otherType {
		b = append(b, "application/octet-stream"...)
	} else {
		b = append(b, p.ContentType()...)
	}
	if it.variant == encoded {
		b = append(b, "\r\nContent-Encoding: gzip"...)
	}
	switch {
	case p.Chunked:
		b = append(b, "\r\nTransfer-Encoding: chunked"...)
	case it.typ == itTruncated:
		b = append(b, "\r\nContent-Length: "...)
		b = strconv.AppendInt(b, 2*p.Size+4096, 10) // the server sent more than was kept
	default:
		b = append(b, "\r\nContent-Length: "...)
		b = strconv.AppendInt(b, p.Size, 10)
	}
	switch it.typ {
	case it301:
		b = append(b, "\r\nLocation: "...)
		b = append(b, h.base...)
		b = append(b, "/new"...)
		b = append(b, it.path...)
	case it206:
		b = fmt.Appendf(b, "\r\nAccept-Ranges: bytes\r\nContent-Range: bytes 0-%d/%d", p.Size-1, 2*p.Size+4096)
	}
	b = append(b, "\r\nConnection: close\r\n\r\n"...)
	w.httpHdr = b
}

// hashPayload computes the digests of p into the writer's hashes, with
// w.httpHdr at the start of the block digest, and leaves a small payload's
// bytes in w.pbuf.
func (w *writer) hashPayload(p Payload, small bool) {
	w.sha1b.Reset()
	w.sha1p.Reset()
	w.identity.Reset()
	hs := []io.Writer{w.sha1b, w.sha1p, &w.identity}
	if w.algo != nil {
		w.algo.Reset()
		hs = append(hs, w.algo)
	}
	w.sha1b.Write(w.httpHdr)
	if small {
		w.pbuf.b = w.pbuf.b[:0]
		p.write(&w.pbuf, w.buf)
		for _, h := range hs {
			h.Write(w.pbuf.b)
		}
		return
	}
	p.write(io.MultiWriter(hs...), w.buf)
}

// writePayload writes p's bytes to the current record.
func (w *writer) writePayload(p Payload, small bool) {
	if small {
		w.out.Write(w.pbuf.b)
		return
	}
	p.write(&w.out, w.buf)
}

// listed records a listed response's manifest line, and its replay key
// under the configured policy, made from the head just written.
func (w *writer) listed(it *item, uri, date string, start, length int64) {
	p := w.p.payloads[it.pay]
	var d string
	if w.algo != nil {
		d = w.p.cfg.Algorithm.Format(w.algo.Sum(nil))
	} else {
		d = sha1Label(w.sha1p)
	}
	format := record.WARC
	if w.fp.format.IsARC() {
		format = record.ARC
	}
	head := record.HTTPHead{Raw: w.httpHdr, Status: httpStatus(w.httpHdr), Complete: true}
	w.out1.recs = append(w.out1.recs, listedRec{
		line: manifest.Line{
			File:   w.fp.name,
			Offset: start,
			Length: length,
			URI:    manifest.EscapeField(uri),
			Date:   date,
			Digest: d,
			Fields: 6,
		},
		recMeta: recMeta{
			key:    payloadKey{size: p.StoredSize(), hash: w.identity.Sum64()},
			replay: w.p.cfg.Policy.Key(&record.Record{Format: format, URI: uri}, &head),
			pay:    it.pay,
			stored: p.StoredSize(),
		},
	})
}

// httpStatus reads the status code of a status line the writer made.
func httpStatus(head []byte) int {
	n, _ := strconv.Atoi(string(head[9:12]))
	return n
}

// revisitListed records the revisit line warcsum lists for a revisit
// record: its digest only when it is in the manifest's algorithm.
func (w *writer) revisitListed(uri, date, refURI, refDate, payloadDigest string, start, length int64) {
	d := payloadDigest
	if w.algo != nil {
		d = manifest.NoDigest
	}
	w.out1.recs = append(w.out1.recs, listedRec{
		line: manifest.Line{File: w.fp.name, Offset: start, Length: length, URI: manifest.EscapeField(uri), Date: date,
			Digest: d, Class: manifest.RevisitClass, Copy: manifest.RevisitCopy,
			RefURI: manifest.EscapeField(refURI), RefDate: refDate, Fields: 10},
		recMeta: recMeta{pay: -1},
	})
}

func requestTarget(path string) string { return strings.ReplaceAll(path, " ", "%20") }

func (w *writer) warcResponse(it *item) error {
	p := w.p.payloads[it.pay]
	uri, date := w.p.uri(it), warcDate(it.date)
	headerURI := uri
	if it.wrap {
		headerURI = "<" + uri + ">"
	}
	ip := w.p.hosts[it.host].ip
	w.httpHeader(p, it)
	stored := p.StoredSize()
	small := stored <= smallPayload
	w.hashPayload(p, small)
	payloadDigest, blockDig := sha1Label(w.sha1p), sha1Label(w.sha1b)
	id := w.uuid()
	if w.p.cfg.NonCandidates {
		w.block = fmt.Appendf(w.block[:0], "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Mozilla/5.0 (compatible; warcgen/1.0)\r\nAccept: */*\r\nAccept-Encoding: identity\r\n\r\n",
			requestTarget(it.path), w.p.hosts[it.host].name)
		w.startHeader("request", w.uuid(), date)
		w.field("WARC-Target-URI", headerURI)
		w.field("WARC-IP-Address", ip)
		w.field("WARC-Concurrent-To", id)
		w.field("Content-Type", "application/http; msgtype=request")
		w.field("WARC-Block-Digest", blockDigest(w.block))
		w.finishHeader(int64(len(w.block)))
		if err := w.simpleRecord(w.block); err != nil {
			return err
		}
	}
	w.startHeader("response", id, date)
	w.field("WARC-Target-URI", headerURI)
	w.field("WARC-IP-Address", ip)
	if it.typ == itTruncated {
		w.field("WARC-Truncated", "length")
	}
	w.field("Content-Type", "application/http; msgtype=response")
	w.field("WARC-Payload-Digest", payloadDigest)
	w.field("WARC-Block-Digest", blockDig)
	w.finishHeader(int64(len(w.httpHdr)) + stored)
	start := w.begin()
	w.out.Write(w.hdr)
	w.out.Write(w.httpHdr)
	w.writePayload(p, small)
	w.out.Write([]byte("\r\n\r\n"))
	length, err := w.end(start)
	if err != nil {
		return err
	}
	w.out1.responses++
	w.lastID, w.lastURI = id, uri
	if it.typ == itResponse {
		w.listed(it, uri, date, start, length)
		if !w.first.ok {
			w.first.uri, w.first.date, w.first.payloadDigest, w.first.ok = uri, date, payloadDigest, true
		}
	}
	return nil
}

// --- ARC ---

func (w *writer) arcName() string { return strings.TrimSuffix(w.fp.name, ".gz") }

func (w *writer) arcFiledesc() error {
	start := w.begin()
	w.arcFiledescRecord(start)
	_, err := w.end(start)
	return err
}

func (w *writer) arcDNS(it *item) error {
	h := &w.p.hosts[it.host]
	body := fmt.Sprintf("%s\n%s.\t300\tIN\tA\t%s\n", arcDate(it.date), h.name, h.ip)
	start := w.begin()
	w.arcRecordLine(start, "dns:"+h.name, "192.0.2.53", arcDate(it.date), "text/dns", "-", int64(len(body)))
	w.out.Write([]byte(body))
	w.arcRecordEnd(it)
	_, err := w.end(start)
	return err
}

func (w *writer) arcResponse(it *item) error {
	p := w.p.payloads[it.pay]
	uri := w.p.uri(it)
	w.httpHeader(p, it)
	stored := p.StoredSize()
	small := stored <= smallPayload
	w.hashPayload(p, small)
	start := w.begin()
	w.arcRecordLine(start, uri, w.p.hosts[it.host].ip, arcDate(it.date), p.mimeType(), w.arcResultCode(), int64(len(w.httpHdr))+stored)
	w.out.Write(w.httpHdr)
	w.writePayload(p, small)
	w.arcRecordEnd(it)
	length, err := w.end(start)
	if err != nil {
		return err
	}
	w.out1.responses++
	if it.typ == itResponse {
		w.listed(it, uri, warcDate(it.date), start, length)
	}
	return nil
}
