package verify

import (
	"fmt"
	"io"

	"warcdedup/manifest"
)

// Order compares two manifests record by record in order, as a conversion
// (ARC to WARC) must keep them: the same URI, date and digest in the same
// place; offsets and lengths may differ. It is the paper's step 4.
func Order(before, after *manifest.Reader, violation func(string)) (Stats, error) {
	var st Stats
	report := func(format string, args ...any) {
		st.Violations++
		violation(fmt.Sprintf(format, args...))
	}
	before.RequireFields(6, 7, 10)
	after.RequireFields(6, 7, 10)
	for {
		b, errB := before.Next()
		a, errA := after.Next()
		if errB != nil && errB != io.EOF {
			return st, errB
		}
		if errA != nil && errA != io.EOF {
			return st, errA
		}
		if errB == io.EOF && errA == io.EOF {
			return st, nil
		}
		switch {
		case errB == io.EOF:
			st.After++
			report("after line %d: %s %s %s has no counterpart before", after.LineNumber(), a.URI, a.Date, a.Digest)
			continue
		case errA == io.EOF:
			st.Before++
			report("before line %d: %s %s %s (%s offset %d) is missing after", before.LineNumber(), b.URI, b.Date, b.Digest, b.File, b.Offset)
			continue
		}
		st.Before++
		st.After++
		if a.URI != b.URI || a.Date != b.Date || a.Digest != b.Digest {
			report("line %d: before %s %s %s (%s offset %d), after %s %s %s (%s offset %d)", before.LineNumber(),
				b.URI, b.Date, b.Digest, b.File, b.Offset, a.URI, a.Date, a.Digest, a.File, a.Offset)
			continue
		}
		st.Themselves++
	}
}
