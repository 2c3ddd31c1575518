package refs

import (
	"io"

	"warcdedup/manifest"
)

// Protection holds the records that revisits already in the collection
// refer to. They must stay responses: rewriting one would leave an existing
// revisit pointing at a revisit, which replay tools cannot resolve.
type Protection struct {
	pinned  map[string]bool // "uri date"
	anyDate map[string]bool // uri, for revisits without WARC-Refers-To-Date
}

// ReadProtection reads the revisit lines of a manifest written by
// warcsum --revisits (10 fields, copy > 1); other lines are ignored.
func ReadProtection(in *manifest.Reader) (*Protection, error) {
	p := &Protection{pinned: map[string]bool{}, anyDate: map[string]bool{}}
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
