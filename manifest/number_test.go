package manifest_test

import (
	"fmt"
	"strings"
	"testing"

	"warcdedup/manifest"
)

// TestNumberer proves the copy numbers of a class: the earliest capture is
// the original, later ones name it, except those an existing revisit
// refers to and those with the original's URI and date, which stay
// responses; a new digest or ext starts a new class; a record listed twice
// is numbered once.
func TestNumberer(t *testing.T) {
	const a, b = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	line := func(file string, off int64, uri, date, d string, ext int) manifest.Line {
		return manifest.Line{File: file, Offset: off, Length: 10, URI: uri, Date: date, Digest: d, Class: ext, Fields: 7}
	}
	tests := []struct {
		name  string
		lines []manifest.Line
		pins  []manifest.Line // revisit lines
		want  []string        // "copy refuri refdate", "" for a line not numbered
	}{
		{"earliest is the original", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("f", 10, "u2", "d2", a, 0), line("g", 0, "u3", "d3", a, 0)}, nil,
			[]string{"1 - -", "2 u1 d1", "3 u1 d1"}},
		{"new ext, new class", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("f", 10, "u2", "d2", a, 1), line("g", 0, "u3", "d3", a, 1)}, nil,
			[]string{"1 - -", "1 - -", "2 u2 d2"}},
		{"new digest, new class", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("f", 10, "u2", "d2", b, 0)}, nil,
			[]string{"1 - -", "1 - -"}},
		{"same record twice", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("f", 0, "u1", "d1", a, 0), line("f", 10, "u2", "d2", a, 0)}, nil,
			[]string{"1 - -", "", "2 u1 d1"}},
		{"original's URI and date kept", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("g", 0, "u1", "d1", a, 0), line("g", 10, "u1", "d2", a, 0)}, nil,
			[]string{"1 - -", "1 - -", "2 u1 d1"}},
		{"pinned capture kept", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("f", 10, "u2", "d2", a, 0), line("f", 20, "u3", "d3", a, 0)},
			[]manifest.Line{{URI: "r", Date: "d9", Digest: a, Class: -1, RefURI: "u2", RefDate: "d2", Fields: 10}},
			[]string{"1 - -", "1 - -", "2 u1 d1"}},
		{"pinned by URI, any date", []manifest.Line{line("f", 0, "u1", "d1", a, 0), line("f", 10, "u2", "d2", a, 0), line("f", 20, "u2", "d3", a, 0)},
			[]manifest.Line{{URI: "r", Date: "d9", Digest: a, Class: -1, RefURI: "u2", RefDate: "*", Fields: 10}},
			[]string{"1 - -", "1 - -", "1 - -"}},
		{"committed capture kept, later than a new original", []manifest.Line{line("new/f", 0, "u1", "d1", a, 0), line("jan/f", 10, "u2", "d2", a, 0), line("new/g", 20, "u3", "d3", a, 0)}, nil,
			[]string{"1 - -", "1 - -", "2 u1 d1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pins manifest.Pins
			for i := range tt.pins {
				pins.Add(&tt.pins[i])
			}
			// Files of the committed crawl "jan" must stay.
			committed := func(l *manifest.Line) bool { return strings.HasPrefix(l.File, "jan/") }
			n := manifest.Numberer{Pinned: pins.Has, Kept: committed}
			for i, l := range tt.lines {
				got := ""
				if n.Number(&l) {
					got = fmt.Sprintf("%d %s %s", l.Copy, l.RefURI, l.RefDate)
					if _, err := manifest.Parse([]byte(l.String())); err != nil {
						t.Errorf("line %d: %q does not parse: %v", i, l.String(), err)
					}
				}
				if got != tt.want[i] {
					t.Errorf("line %d: %q, want %q", i, got, tt.want[i])
				}
			}
		})
	}
}
