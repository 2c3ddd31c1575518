// Package policy says which byte-identical records may become revisits of
// one another. Identical payload bytes are not enough for replay:
// ReplayWeb.page (wabac.js) serves a revisit with its original's HTTP status
// and headers, so a 203 replayed as 200, a text/plain body as
// application/json, and a body stored with Content-Encoding: gzip was
// served raw when its original had no such header (measured,
// shared/spec/prior-art.md). A Policy gives each record a key; records
// become revisits only of an original with the same key and the same bytes.
package policy

import (
	"fmt"
	"strconv"
	"strings"

	"warcdedup/manifest"
	"warcdedup/record"
)

// Policy is a rule for which duplicates are replay-equivalent.
type Policy int

const (
	// Replay, the default: a duplicate becomes a revisit only of an
	// original that a replay tool taking headers from either record serves
	// the same way: the same container format (ReplayWeb.page serves no
	// record of an ARC file, nor of a pre-standard WARC/0.17 or 0.18 file,
	// which it indexes but answers 404 for), HTTP status, and the response
	// headers that change what the browser makes of the body
	// (ReplayHeaders).
	Replay Policy = iota
	// Payload: identical payload bytes are enough (the WARCrefs paper's
	// rule). Right for pywb, which serves a revisit's own headers.
	Payload
	// URI: only duplicates of the same URI, for indexes such as
	// OpenWayback's that resolve revisits within one URL.
	URI
)

// ReplayHeaders are the HTTP response headers the Replay policy compares,
// lower-cased values with blanks removed (Location verbatim).
// Content-Type, Content-Encoding and Transfer-Encoding decide how the
// stored bytes are decoded and shown; Location where a redirect goes;
// Content-Disposition whether the body is shown or saved.
var ReplayHeaders = []string{"Content-Type", "Content-Encoding", "Transfer-Encoding", "Content-Disposition", "Location"}

// Parse reads a policy name: replay, payload or uri.
func Parse(s string) (Policy, error) {
	switch s {
	case "replay":
		return Replay, nil
	case "payload":
		return Payload, nil
	case "uri":
		return URI, nil
	}
	return 0, fmt.Errorf("policy %q: want replay, payload or uri", s)
}

func (p Policy) String() string {
	switch p {
	case Replay:
		return "replay"
	case Payload:
		return "payload"
	case URI:
		return "uri"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// Apart says how a duplicate that the policy keeps as an original of its
// own differs from the earlier captures of the same bytes.
func (p Policy) Apart() string {
	if p == URI {
		return "of another URI than"
	}
	return "served differently (status, type, encoding or container) from"
}

// Key returns what two byte-identical records must share to be revisits of
// one another under p. rec is the record's header; head its HTTP head.
func (p Policy) Key(rec *record.Record, head *record.HTTPHead) string {
	switch p {
	case Payload:
		return ""
	case URI:
		return manifest.URIField(rec)
	}
	var b strings.Builder
	b.WriteString(container(rec))
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(head.Status))
	for _, name := range ReplayHeaders {
		b.WriteByte(0)
		v := head.Get(name)
		if name != "Location" {
			v = strings.ToLower(strings.Join(strings.Fields(v), ""))
		}
		b.WriteString(v)
	}
	return b.String()
}

// container names what holds a record, as replay tools tell them apart:
// ARC, WARC/0.x (before the standard) or WARC.
func container(rec *record.Record) string {
	if rec.Format == record.WARC && (strings.HasPrefix(rec.Version, "WARC/0.") || strings.HasPrefix(rec.Version, "warc/0.")) {
		return "WARC/0.x"
	}
	return rec.Format.String()
}

// Describe spells a key out for messages: status and headers that differ.
func Describe(key string) string {
	parts := strings.Split(key, "\x00")
	if len(parts) != 2+len(ReplayHeaders) {
		if key == "" {
			return "(any)"
		}
		return key
	}
	s := parts[0] + " status " + parts[1]
	for i, name := range ReplayHeaders {
		if v := parts[2+i]; v != "" {
			s += ", " + name + ": " + v
		}
	}
	return s
}
