package reindex

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"warcdedup/cdx"
	"warcdedup/convmap"
)

// Conversion makes the lines of ARC files converted to WARC in place
// (package migrate) the lines a WARC indexer writes for the WARC files,
// from the conversion map: each line of a converted ARC gets the WARC's
// file name (the ARC's base name replaced in the name as the index spells
// it), its record's offset and length in the WARC, and the mime, status
// and digest a WARC indexer gives that record (for a response, the HTTP
// Content-Type up to ";" and the WARC-Payload-Digest the conversion wrote,
// spelt as the index spells digests). A Copy applies it before the rewrite
// log, whose offsets are the WARC's.
//
// An ARC index has no line for the filedesc record (pywb leaves it out),
// which in the WARC is a metadata record that WARC indexers list: Finish
// writes that line, in the index's format, for each converted file the
// index has lines of.
type Conversion struct {
	Map   *convmap.Map
	Stats ConversionStats

	labelled int8
	like     *cdx.Line                  // a record line of the index, for the lines added
	names    map[*convmap.Mapped]string // each converted file's WARC name as the index spells it
}

// ConversionStats counts what a Conversion did.
type ConversionStats struct {
	Lines   int64 // lines of converted ARC files, made the WARC's
	Added   int64 // filedesc lines added
	Missing int64 // records of converted files with lines that the index has no line for (filedesc aside)
}

// Apply makes l, if it is a line of a converted ARC, its WARC's line. An
// error leaves l as read.
func (c *Conversion) Apply(l *cdx.Line) error {
	if l.Kind != cdx.Record {
		return nil
	}
	if c.like == nil {
		c.like = l.Clone()
	}
	if c.labelled == 0 && len(l.Digest) > 0 {
		c.labelled = -1
		if bytes.IndexByte(l.Digest, ':') > 0 {
			c.labelled = 1
		}
	}
	if l.Filename == nil || l.Offset < 0 {
		return nil
	}
	f, err := c.Map.Resolve(string(l.Filename))
	if err != nil || f == nil {
		return err
	}
	f.Lines++
	rec, err := c.Map.Lookup(f, l.Offset, l.Length)
	if err != nil {
		return err
	}
	name := string(l.Filename)
	arcBase, warcBase := path.Base(f.ARC), path.Base(f.WARC)
	if !strings.HasSuffix(name, arcBase) {
		return fmt.Errorf("file name %q: not %s", name, arcBase)
	}
	l.SetFilename(name[:len(name)-len(arcBase)] + warcBase)
	if c.names == nil {
		c.names = map[*convmap.Mapped]string{}
	}
	if _, ok := c.names[f]; !ok {
		c.names[f] = string(l.Filename)
	}
	l.SetOffset(rec.NewOffset)
	l.SetLength(rec.NewLength)
	l.SetMIME(rec.MIME)
	l.SetStatus(rec.Status)
	l.SetDigest(c.spell(l, rec.Digest))
	c.Stats.Lines++
	return nil
}

// spell writes a "sha1:..." digest as the line, or else the index, spells
// digests; without any, as the WARC indexers of CDX and warcio.js do,
// without the label.
func (c *Conversion) spell(l *cdx.Line, d string) string {
	labelled := c.labelled > 0
	if len(l.Digest) > 0 {
		labelled = bytes.IndexByte(l.Digest, ':') > 0
	}
	if i := strings.IndexByte(d, ':'); i > 0 && !labelled {
		d = d[i+1:]
	}
	return d
}

// Finish writes to out the lines the index lacks for the filedesc records
// of the converted files it has lines of (their metadata records in the
// WARC), and counts the other records it lacks.
func (c *Conversion) Finish(out *cdx.Writer) error {
	for _, f := range c.Map.Files() {
		if f.Lines == 0 {
			continue
		}
		var err error
		c.Map.Unhit(f, func(r convmap.Record) {
			if r.Type != "metadata" || f.FiledescURI == "" || c.like == nil || err != nil {
				c.Stats.Missing++
				return
			}
			name, ok := c.names[f]
			if !ok {
				c.Stats.Missing++
				return
			}
			line := c.like.AppendLike(nil, cdx.Values{URLKey: f.FiledescURI, Timestamp: timestamp14(f.FiledescDate), URL: f.FiledescURI,
				MIME: r.MIME, Status: r.Status, Digest: c.spell(c.like, r.Digest), Filename: name, Offset: r.NewOffset, Length: r.NewLength})
			err = out.WriteRaw(line)
			c.Stats.Added++
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// timestamp14 is a WARC date's 14 digits.
func timestamp14(date string) string {
	var b []byte
	for i := 0; i < len(date) && len(b) < 14; i++ {
		if date[i] >= '0' && date[i] <= '9' {
			b = append(b, date[i])
		}
	}
	return string(b)
}

// convert applies the Copy's Conversion to l, if any.
func (j *Copy) convert(l *cdx.Line, input string) error {
	if j.Conversion == nil {
		return nil
	}
	if err := j.Conversion.Apply(l); err != nil {
		l.Revert()
		return &LineError{Input: input, Line: l.Number, Err: err}
	}
	return nil
}
