package record

import (
	"strings"
)

// Field is one named header field, as written.
type Field struct {
	Name, Value string
}

// Header is the list of a WARC record's named fields in the order written.
// Names compare case-insensitively; a field may be repeated.
type Header []Field

// Get returns the value of the first field named name, or "".
func (h Header) Get(name string) string {
	v, _ := h.Lookup(name)
	return v
}

// Lookup returns the value of the first field named name and whether there
// is one.
func (h Header) Lookup(name string) (string, bool) {
	for i := range h {
		if strings.EqualFold(h[i].Name, name) {
			return h[i].Value, true
		}
	}
	return "", false
}

// Has reports whether a field named name is present.
func (h Header) Has(name string) bool {
	_, ok := h.Lookup(name)
	return ok
}

// TargetURI is the record's target URI as written, without the <...> that
// wget 1.14 wrapped around it: what indexers (warcio, pywb) record for it,
// and so what a revisit's WARC-Refers-To-Target-URI must say to name it.
func (r *Record) TargetURI() string { return StripAngles(r.URI) }

// StripAngles removes a <...> wrapper from a URI.
func StripAngles(uri string) string {
	if len(uri) >= 2 && uri[0] == '<' && uri[len(uri)-1] == '>' {
		return uri[1 : len(uri)-1]
	}
	return uri
}
