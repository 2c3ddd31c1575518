package refs

import (
	"io"
	"os"

	"warcdedup/manifest"
	"warcdedup/record"
)

// Protection holds the records that revisits already in the collection
// refer to. They must stay responses: rewriting one would leave an existing
// revisit pointing at a revisit, which replay tools cannot resolve.
//
// The same manifest also tells where the responses are whose URI holds
// whitespace or control bytes: the manifest escapes those as %XX, which
// cannot be undone (a URI may hold a literal %20), so a revisit that refers
// to such a record reads the record's own WARC-Target-URI to name it
// exactly.
type Protection struct {
	pinned    map[string]bool     // "uri date"
	anyDate   map[string]bool     // uri, for revisits without WARC-Refers-To-Date
	originals map[string]location // "uri date" -> where, for URIs with escapes
	exact     map[string]string   // "uri date" -> WARC-Target-URI as the record spells it
}

// location is where a record is stored.
type location struct {
	file           string
	offset, length int64
}

// ReadProtection reads the revisit lines of a manifest written by
// warcsum --revisits (10 fields, copy > 1); other lines are ignored.
func ReadProtection(in *manifest.Reader) (*Protection, error) {
	p := &Protection{pinned: map[string]bool{}, anyDate: map[string]bool{}, originals: map[string]location{}}
	in.RequireFields(6, 7, 10)
	for {
		l, err := in.Next()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return nil, err
		}
		if l.Fields != 10 || l.Copy < 2 {
			if hasEscape(l.URI) {
				p.originals[l.URI+" "+l.Date] = location{l.File, l.Offset, l.Length}
			}
			continue
		}
		if l.RefDate == "*" {
			p.anyDate[l.RefURI] = true
		} else {
			p.pinned[l.RefURI+" "+l.RefDate] = true
		}
	}
}

// Has reports whether the record with this URI and date (manifest fields
// 4 and 5) is referred to by an existing revisit.
func (p *Protection) Has(uri, date string) bool {
	return p != nil && (p.pinned[uri+" "+date] || p.anyDate[uri])
}

// exactURI returns the WARC-Target-URI, as its record spells it, of the
// response with this manifest URI and date, when the manifest escaped it.
func (p *Protection) exactURI(uri, date string) (string, bool) {
	if p == nil {
		return "", false
	}
	exact, ok := p.exact[uri+" "+date]
	return exact, ok
}

// resolve reads the records whose URIs the manifest escaped, through
// open (which gives a file's path), before any file is rewritten: once a
// file is, its offsets move. A record that no longer matches its line is
// left out; revisits that refer to it keep the escaped spelling.
func (p *Protection) resolve(path func(file string) (string, error)) {
	if p == nil {
		return
	}
	p.exact = map[string]string{}
	for key, loc := range p.originals {
		if exact, ok := readTargetURI(path, loc, key); ok {
			p.exact[key] = exact
		}
	}
}

func readTargetURI(path func(string) (string, error), loc location, key string) (string, bool) {
	name, err := path(loc.file)
	if err != nil {
		return "", false
	}
	f, err := os.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	rr, err := record.NewReader(io.NewSectionReader(f, loc.offset, loc.length), loc.file)
	if err != nil {
		return "", false
	}
	rec, err := rr.Next()
	if err != nil || manifest.URIField(rec)+" "+manifest.DateField(rec) != key {
		return "", false
	}
	return rec.TargetURI(), true
}

// hasEscape reports whether a manifest URI holds a %XX that escaping made:
// a byte 0x00-0x20 or 0x7F.
func hasEscape(uri string) bool {
	for i := 0; i+2 < len(uri); i++ {
		if uri[i] != '%' {
			continue
		}
		switch uri[i+1 : i+3] {
		case "20", "7F", "7f":
			return true
		}
		if uri[i+1] == '0' || uri[i+1] == '1' {
			return true
		}
	}
	return false
}
