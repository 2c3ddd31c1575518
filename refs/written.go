package refs

import (
	"strings"

	"warcdedup/record"
)

// InWrittenForm says whether a revisit's header has the form Revisit.Bytes
// writes: the fields it inserts, consecutive and in its order
// (WARC-Profile, WARC-Refers-To-Target-URI, WARC-Refers-To-Date, the
// WARC-Payload-Digest it adds if the record had none, WARC-Truncated:
// length), or a Warcdedup- field. An undo uses it to find revisits that
// look like this toolchain's in files its rewrite log does not name (a
// work directory restored from an older copy, another one's): a sign,
// not a proof, since another tool may write the same fields in the same
// order. The names are spelt out so that this stays the form written, if
// the constants move.
func InWrittenForm(h record.Header) bool {
	for _, f := range h {
		if len(f.Name) > len("Warcdedup-") && strings.EqualFold(f.Name[:len("Warcdedup-")], "Warcdedup-") {
			return true
		}
	}
	for i, f := range h {
		if !strings.EqualFold(f.Name, "WARC-Profile") {
			continue
		}
		next := func(name string) bool {
			if i+1 < len(h) && strings.EqualFold(h[i+1].Name, name) {
				i++
				return true
			}
			return false
		}
		if !next("WARC-Refers-To-Target-URI") || !next("WARC-Refers-To-Date") {
			return false
		}
		next("WARC-Payload-Digest")
		return next("WARC-Truncated") && strings.TrimSpace(h[i].Value) == "length"
	}
	return false
}
