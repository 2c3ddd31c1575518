package manifest

// Pins are the responses that revisit records already in the collection
// refer to, read from revisit lines. Such a response must stay a response:
// rewriting it would leave the existing revisit pointing at a revisit,
// which replay tools cannot resolve.
type Pins struct {
	exact   map[string]struct{} // "uri date"
	anyDate map[string]struct{} // uri, for revisits that name no date ("*")
}

// Add pins what the revisit line l refers to; other lines are ignored.
func (p *Pins) Add(l *Line) {
	if !l.IsRevisit() {
		return
	}
	if l.RefDate == "*" {
		if p.anyDate == nil {
			p.anyDate = map[string]struct{}{}
		}
		p.anyDate[l.RefURI] = struct{}{}
		return
	}
	if p.exact == nil {
		p.exact = map[string]struct{}{}
	}
	p.exact[l.RefURI+" "+l.RefDate] = struct{}{}
}

// Has reports whether a revisit refers to the response with this URI and
// date (manifest fields 4 and 5). A nil Pins has none.
func (p *Pins) Has(uri, date string) bool {
	if p == nil {
		return false
	}
	if _, ok := p.exact[uri+" "+date]; ok {
		return true
	}
	_, ok := p.anyDate[uri]
	return ok
}

// Len is the number of pinned URIs and dates.
func (p *Pins) Len() int {
	if p == nil {
		return 0
	}
	return len(p.exact) + len(p.anyDate)
}

// Reset empties p, keeping its maps.
func (p *Pins) Reset() {
	clear(p.exact)
	clear(p.anyDate)
}

// Numberer assigns copy numbers (fields 8-10) within one (digest, ext)
// class whose lines arrive in (date, file, offset) order. A new class
// starts when either the digest or the ext differs (the original
// warcsumproc required both to differ, and so numbered a collision class as
// copies of another).
//
// The first line of a class is its original, copy 1. A later line is kept
// too (copy 1, "- -") when a revisit already in the collection refers to it
// (Pinned), when it must stay (Kept), or when it has the original's URI
// and date: a revisit that
// names its own URI and date is dropped by wabac.js and is ambiguous to
// every index. Every other line is a duplicate, copy 2, 3, ..., naming the
// original's URI and date.
type Numberer struct {
	// Pinned reports whether an existing revisit refers to the response
	// with this URI and date; nil means none does.
	Pinned func(uri, date string) bool
	// Kept reports whether the line's record must stay a response
	// whatever its date (a committed original of a crawl index, which
	// later runs never rewrite); nil means none must.
	Kept func(l *Line) bool

	started    bool
	digest     string
	ext        int
	copies     int
	refURI     string
	refDate    string
	prevFile   string
	prevOffset int64
}

// Number turns l into its 10-field form. It returns false, leaving l as it
// was, when l names the same record (file and offset) as the line before it
// in its class: the same record listed twice is not a duplicate of itself.
func (n *Numberer) Number(l *Line) bool {
	if !n.started || l.Digest != n.digest || l.Class != n.ext {
		n.started, n.digest, n.ext, n.copies = true, l.Digest, l.Class, 1
		n.refURI, n.refDate = l.URI, l.Date
		n.prevFile, n.prevOffset = l.File, l.Offset
		l.Fields, l.Copy, l.RefURI, l.RefDate = 10, 1, "-", "-"
		return true
	}
	if l.File == n.prevFile && l.Offset == n.prevOffset {
		return false
	}
	n.prevFile, n.prevOffset = l.File, l.Offset
	l.Fields = 10
	if (l.URI == n.refURI && l.Date == n.refDate) || (n.Pinned != nil && n.Pinned(l.URI, l.Date)) || (n.Kept != nil && n.Kept(l)) {
		l.Copy, l.RefURI, l.RefDate = 1, "-", "-"
		return true
	}
	n.copies++
	l.Copy, l.RefURI, l.RefDate = n.copies, n.refURI, n.refDate
	return true
}
