// Package convert turns ARC files into WARC files, mapped as the IIPC
// implementation guidelines say (shared/spec/records.md section 4): a new
// warcinfo record naming the source, the filedesc as a metadata record,
// response records for HTTP and resource records for the rest, each block
// the ARC record's bytes verbatim, with new record IDs and computed digests.
package convert

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"warcdedup/digest"
	"warcdedup/gzmulti"
	"warcdedup/manifest"
	"warcdedup/record"
)

// Options of a conversion.
type Options struct {
	Version       string // WARC version written: "1.0" (default) or "1.1"
	Plain         bool   // write .warc, not one gzip member per record
	DropTruncated bool   // leave truncated ARC records out instead of writing them with WARC-Truncated
	Software      string // named in the warcinfo record
	// Now and NewID make output reproducible in tests; time.Now and random
	// UUIDs when nil.
	Now   func() time.Time
	NewID func() string
	// Damage receives each ARC record that could not be converted whole
	// (truncated, unreadable, or without a date) and each stretch of bytes
	// skipped, with its offset: each is counted in Stats.
	Damage func(error)
}

// ErrNotARC is the error of a file that is not an ARC file (a WARC file, or
// a file in which no ARC record could be read): nothing is converted.
var ErrNotARC = errors.New("not an ARC file")

// Stats counts what a conversion did.
type Stats struct {
	Records   int64 // ARC records read, filedesc included
	Written   int64 // WARC records written, warcinfo included
	Truncated int64 // truncated ARC records written with WARC-Truncated: length
	Dropped   int64 // truncated ARC records left out (DropTruncated)
	Damaged   int64 // ARC records that could not be read at all, and stretches of bytes skipped
}

// Add adds o to s.
func (s *Stats) Add(o *Stats) {
	s.Records += o.Records
	s.Written += o.Written
	s.Truncated += o.Truncated
	s.Dropped += o.Dropped
	s.Damaged += o.Damaged
}

// OutputName is the WARC name for an ARC name: x.arc.gz and x.arc become
// x.warc.gz (x.warc with plain).
func OutputName(arcName string, plain bool) string {
	base := arcName
	lower := strings.ToLower(base)
	for _, ext := range []string{".arc.gz", ".arc"} {
		if strings.HasSuffix(lower, ext) {
			base = base[:len(base)-len(ext)]
			break
		}
	}
	if plain {
		return base + ".warc"
	}
	return base + ".warc.gz"
}

// blockMemory is the largest block held in memory while its digests are
// computed; larger ones go through a temporary file.
const blockMemory = 8 << 20

// converter writes one WARC file.
type converter struct {
	opt     Options
	out     io.Writer
	zw      *gzmulti.Writer // nil for a plain WARC
	hdr     bytes.Buffer
	block   bytes.Buffer
	tmp     *os.File
	size    int64
	infoID  string
	srcName string
	outName string
	// compressed is set for a gzip ARC, whose record offsets count bytes
	// of its inflated stream.
	compressed bool
	blockSum   hash.Hash
	paySum     hash.Hash
}

// CheckVersion refuses a WARC version Convert does not write: a command
// refuses it as it parses its flags, before any file is read.
func CheckVersion(v string) error {
	if v != "1.0" && v != "1.1" {
		return fmt.Errorf("WARC version %q: want 1.0 or 1.1", v)
	}
	return nil
}

// Convert reads the ARC file src and writes its WARC form to dst; srcName
// names the ARC in the warcinfo record and in errors, outName is the WARC
// file's name.
func Convert(src io.Reader, srcName, outName string, dst io.Writer, opt Options) (Stats, error) {
	if opt.Version == "" {
		opt.Version = "1.0"
	}
	if err := CheckVersion(opt.Version); err != nil {
		return Stats{}, err
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.NewID == nil {
		opt.NewID = randomID
	}
	c := &converter{opt: opt, out: dst, srcName: srcName, outName: outName, blockSum: sha1.New(), paySum: sha1.New()}
	if !opt.Plain {
		c.zw = gzmulti.NewWriter(dst, gzip.DefaultCompression)
	}
	defer c.closeTmp()
	var st Stats
	// Records need no gzip member of their own to be converted: a whole
	// ARC compressed as one member reads as well as one member per record.
	rr, err := record.NewStreamReader(src, srcName)
	if err != nil {
		return st, err
	}
	c.compressed = rr.Compressed()
	first := true
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			st.Damaged++
			c.damage(err)
			continue
		}
		if err != nil {
			return st, err
		}
		if rec.Format != record.ARC {
			return st, fmt.Errorf("%s: %w: it holds %s records (the first at %s)", srcName, ErrNotARC, rec.Format, c.offset(rec.Offset))
		}
		st.Records++
		if first {
			first = false
			if err := c.warcinfo(rec); err != nil {
				return st, err
			}
			st.Written++
		}
		truncated, after, err := c.readBlock(rr, rec)
		if after != nil {
			// The record is whole; bytes after it were skipped.
			st.Damaged++
			c.damage(after)
		}
		if err != nil {
			if !errors.As(err, &damage) {
				return st, err
			}
			st.Damaged++
			c.damage(err)
			continue
		}
		if rec.Date == "" {
			// A WARC record must have a date, and no date is made up (the
			// conversion's time would be taken for the capture's, and no
			// proof could accept it): the record is not converted, the
			// ARC file keeps it.
			st.Damaged++
			c.damage(fmt.Errorf("%s: %s: ARC record %s has no date (%q): a WARC record must have one, and none is made up: not converted (the ARC file keeps it)",
				srcName, c.offset(rec.Offset), rec.URI, rec.ARCFields.Date))
			continue
		}
		if truncated {
			what := "written with WARC-Truncated: length"
			if opt.DropTruncated {
				what = "left out (--drop-truncated)"
			}
			c.damage(fmt.Errorf("%s: %s: ARC record truncated: %d of its %d bytes are in the file; %s", srcName, c.offset(rec.Offset), c.size, rec.BlockLength, what))
			if opt.DropTruncated {
				st.Dropped++
				continue
			}
			st.Truncated++
		}
		if err := c.writeRecord(rec, truncated); err != nil {
			return st, err
		}
		st.Written++
	}
	if first {
		return st, fmt.Errorf("%s: %w: no ARC record could be read", srcName, ErrNotARC)
	}
	return st, nil
}

func (c *converter) damage(err error) {
	if c.opt.Damage != nil {
		c.opt.Damage(err)
	}
}

// offset names an offset of a record as the reader gives it: in the
// inflated stream for a gzip ARC.
func (c *converter) offset(off int64) string {
	if c.compressed {
		return fmt.Sprintf("inflated offset %d", off)
	}
	return fmt.Sprintf("offset %d", off)
}

// readBlock reads rec's block into c.block (or a temporary file), hashing
// it and its payload. A block the file cuts short keeps the bytes that
// exist; truncated says so. after is the damage of bytes skipped after a
// whole block.
func (c *converter) readBlock(rr *record.Reader, rec *record.Record) (truncated bool, after, err error) {
	c.block.Reset()
	c.size = 0
	c.closeTmp()
	c.blockSum.Reset()
	c.paySum.Reset()
	if rec.Type == "filedesc" {
		// The filedesc block is its record line and content verbatim.
		c.store([]byte(rec.ARCLine + "\n"))
	}
	if rec.Type == "response" {
		head, err := rr.ReadHTTPHead()
		if head != nil {
			c.store(head.Raw)
		}
		if err != nil {
			truncated, err = c.endBlock(err)
			return truncated, nil, err
		}
	}
	_, err = rr.WriteTo(storeFunc(c.storePayload))
	if err != nil {
		truncated, err = c.endBlock(err)
		return truncated, nil, err
	}
	if err := rr.Finish(); errors.Is(err, record.ErrRecordEnd) {
		// The record has all its bytes; what follows it is reported, and
		// reading goes on at the next record.
		return false, err, nil
	} else if err != nil {
		truncated, err = c.endBlock(err)
		return truncated, nil, err
	}
	return false, nil, nil
}

// endBlock turns a truncation (the ARC ends inside the record, or its gzip
// member does) into truncated, passing other errors on.
func (c *converter) endBlock(err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if errors.Is(err, record.ErrTruncated) || errors.Is(err, gzmulti.ErrTruncated) {
		return true, nil
	}
	return false, err
}

type storeFunc func([]byte) error

func (f storeFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// store adds block bytes that are not payload (HTTP head, filedesc line).
func (c *converter) store(p []byte) error {
	c.blockSum.Write(p)
	return c.keep(p)
}

func (c *converter) storePayload(p []byte) error {
	c.blockSum.Write(p)
	c.paySum.Write(p)
	return c.keep(p)
}

func (c *converter) keep(p []byte) error {
	c.size += int64(len(p))
	if c.tmp == nil && c.block.Len()+len(p) <= blockMemory {
		c.block.Write(p)
		return nil
	}
	if c.tmp == nil {
		f, err := os.CreateTemp("", "arc2warc-block-*")
		if err != nil {
			return err
		}
		os.Remove(f.Name())
		if _, err := f.Write(c.block.Bytes()); err != nil {
			f.Close()
			return err
		}
		c.tmp = f
		c.block.Reset()
	}
	_, err := c.tmp.Write(p)
	return err
}

func (c *converter) closeTmp() {
	if c.tmp != nil {
		c.tmp.Close()
		c.tmp = nil
	}
}

// warcinfo writes the record that opens the WARC file.
func (c *converter) warcinfo(filedesc *record.Record) error {
	c.infoID = c.opt.NewID()
	software := c.opt.Software
	if software == "" {
		software = "warcdedup arc2warc"
	}
	body := fmt.Sprintf("software: %s\r\nformat: WARC File Format %s\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-%s/\r\ndescription: converted from the ARC (version %s) file %s\r\n",
		software, c.opt.Version, c.opt.Version, filedesc.Version, c.srcName)
	c.hdr.Reset()
	c.field("WARC-Type", "warcinfo")
	c.field("WARC-Record-ID", c.infoID)
	c.field("WARC-Date", c.opt.Now().UTC().Format("2006-01-02T15:04:05Z"))
	c.field("WARC-Filename", c.outName)
	c.field("Content-Type", "application/warc-fields")
	c.field("Content-Length", strconv.Itoa(len(body)))
	return c.emit(strings.NewReader(body))
}

// writeRecord writes rec with the block read by readBlock.
func (c *converter) writeRecord(rec *record.Record, truncated bool) error {
	c.hdr.Reset()
	date := rec.Date // never "": Convert leaves such a record out
	switch rec.Type {
	case "filedesc":
		c.field("WARC-Type", "metadata")
		c.field("WARC-Record-ID", c.opt.NewID())
		c.field("WARC-Date", date)
		c.field("WARC-Target-URI", manifest.EscapeField(rec.URI))
		c.field("WARC-Concurrent-To", c.infoID)
		c.field("Content-Type", "text/plain")
	default:
		typ, ctype := "resource", rec.ARCFields.ContentType
		switch {
		case rec.Type == "response":
			typ, ctype = "response", "application/http; msgtype=response"
		case strings.HasPrefix(rec.URI, "dns:"):
			ctype = "text/dns"
		case ctype == "" || ctype == "-" || strings.EqualFold(ctype, "no-type"):
			ctype = "application/octet-stream"
		}
		c.field("WARC-Type", typ)
		c.field("WARC-Record-ID", c.opt.NewID())
		c.field("WARC-Date", date)
		c.field("WARC-Target-URI", manifest.EscapeField(rec.URI))
		if ip := rec.ARCFields.IP; net.ParseIP(ip) != nil {
			c.field("WARC-IP-Address", ip)
		}
		c.field("WARC-Warcinfo-ID", c.infoID)
		c.field("Content-Type", ctype)
		c.field("WARC-Payload-Digest", digest.SHA1.Format(c.paySum.Sum(nil)))
	}
	c.field("WARC-Block-Digest", digest.SHA1.Format(c.blockSum.Sum(nil)))
	if truncated {
		c.field("WARC-Truncated", "length")
	}
	c.field("Content-Length", strconv.FormatInt(c.size, 10))
	var block io.Reader = bytes.NewReader(c.block.Bytes())
	if c.tmp != nil {
		if _, err := c.tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		block = c.tmp
	}
	return c.emit(block)
}

func (c *converter) field(name, value string) {
	c.hdr.WriteString(name)
	c.hdr.WriteString(": ")
	c.hdr.WriteString(value)
	c.hdr.WriteString("\r\n")
}

// emit writes the version line, the header in c.hdr, the block and the
// record end, as a gzip member of its own unless plain.
func (c *converter) emit(block io.Reader) error {
	var w io.Writer = c.out
	if c.zw != nil {
		w = c.zw
	}
	if _, err := io.WriteString(w, "WARC/"+c.opt.Version+"\r\n"); err != nil {
		return err
	}
	if _, err := w.Write(c.hdr.Bytes()); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\r\n"); err != nil {
		return err
	}
	if _, err := io.Copy(w, block); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\r\n\r\n"); err != nil {
		return err
	}
	if c.zw != nil {
		_, err := c.zw.CloseMember()
		return err
	}
	return nil
}

// randomID returns a new "<urn:uuid:...>" (version 4).
func randomID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
