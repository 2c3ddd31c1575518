// Package show looks at one record, or lists a file's records, as an
// archivist reaches for warcio's index and extract or warchaeology's ls
// and cat to do, and adds what the toolchain knows of a record
// (warcdedup show): for a revisit, where its original is, whether it
// resolves (read and re-hashed) and what undo would give back; for a
// response, the revisits that point at it.
//
// What the toolchain knows comes from the job's work directory (found as
// warcdedup undo finds it, beside the collection): its manifest sorted on
// digest (numbered.manifest, or by-digest.manifest before resolution)
// names the captures of each payload as they were when the job hashed the
// collection, and the rewrite log (entries appended since then) says where
// each of them stands now. A CDX or CDXJ index given with --cdx is asked as
// the access system asks it (pywb's rule, package replaycheck). Without
// either, a revisit's original is looked for in its own file, where many
// crawlers write it.
package show

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"warcdedup/record"
)

// Entry is one record of a file's listing.
type Entry struct {
	Offset int64  `json:"offset"`
	Length int64  `json:"length"` // as stored: its gzip member in a .gz file
	Type   string `json:"type"`
	URI    string `json:"uri,omitempty"`
	Date   string `json:"date,omitempty"`
	// Digest is the record's WARC-Payload-Digest as written ("" for
	// none, and for ARC records, which have no such field).
	Digest string `json:"digest,omitempty"`
}

// ListStats counts what a listing read.
type ListStats struct {
	Records, Damaged int
}

// List writes one line per record of the file name: offset, length as
// stored, type, date, payload digest as written and URI, separated by tabs
// (the URI last: the one field of any width, and one that may hold
// spaces), "-" for a field the record has not; or with asJSON one JSON
// object per line, as warcio index writes. Damage is reported to damage
// (file and offset) and the listing goes on after it, as warcsum's does;
// an error that stops the reading is returned.
func List(w io.Writer, name string, asJSON bool, damage func(error)) (ListStats, error) {
	var st ListStats
	f, err := os.Open(name)
	if err != nil {
		return st, err
	}
	defer f.Close()
	rr, err := record.NewReader(f, name)
	if err != nil {
		return st, err
	}
	enc := json.NewEncoder(w)
	var line []byte
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return st, nil
		}
		var rerr *record.Error
		if errors.As(err, &rerr) {
			st.Damaged++
			damage(err)
			continue
		}
		if err != nil {
			return st, err
		}
		e := Entry{Offset: rec.Offset, Type: rec.Type, URI: rec.TargetURI(), Date: rec.Date, Digest: rec.Header.Get("WARC-Payload-Digest")}
		if err := rr.Finish(); err != nil {
			if errors.As(err, &rerr) {
				st.Damaged++
				damage(err)
				continue
			}
			return st, err
		}
		e.Length = rec.Length
		st.Records++
		if asJSON {
			if err := enc.Encode(e); err != nil {
				return st, err
			}
			continue
		}
		line = strconv.AppendInt(line[:0], e.Offset, 10)
		line = append(line, '\t')
		line = strconv.AppendInt(line, e.Length, 10)
		for _, s := range []string{e.Type, e.Date, e.Digest, e.URI} {
			line = append(append(line, '\t'), orDash(oneLine(s))...)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return st, err
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a field on its line: tabs and line ends (which no header
// value holds unescaped) as spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\t\r\n") {
		return s
	}
	return strings.NewReplacer("\t", " ", "\r", " ", "\n", " ").Replace(s)
}

// ParseTarget splits FILE[:OFFSET]: a name that is a file as given is one
// (a colon in a file name is no offset), else the digits after the last
// colon are the offset. Offset is -1 without one.
func ParseTarget(arg string) (file string, offset int64, err error) {
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		return arg, -1, nil
	}
	i := strings.LastIndexByte(arg, ':')
	if i < 0 {
		return arg, -1, nil
	}
	n, err := strconv.ParseInt(arg[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("%q: want FILE or FILE:OFFSET, the offset a byte count (as warcdedup show FILE lists them)", arg)
	}
	return arg[:i], n, nil
}
