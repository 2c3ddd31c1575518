package tsv

import (
	"slices"
	"testing"
)

// TestSplit proves that a line of either form gives the same fields, and
// that a tab-separated line keeps the blanks inside a field.
func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		n          int
		want       []string
	}{
		{"tabs", "a.warc\t12\tabc", -1, []string{"a.warc", "12", "abc"}},
		{"spaces, the earlier form", "a.warc 12 abc", -1, []string{"a.warc", "12", "abc"}},
		{"an escaped name", "c%20d.warc\t5", -1, []string{"c%20d.warc", "5"}},
		{"a last field with blanks, tabs", "a.warc\t12\tsha\t1 2 3", 4, []string{"a.warc", "12", "sha", "1 2 3"}},
		{"a last field with blanks, spaces", "a.warc 12 sha 1 2 3", 4, []string{"a.warc", "12", "sha", "1 2 3"}},
		{"a space inside a tab-separated field", "x y\tz", -1, []string{"x y", "z"}},
	} {
		if got := SplitN(tt.line, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("%s: SplitN(%q, %d) = %q, want %q", tt.name, tt.line, tt.n, got, tt.want)
		}
		if tt.n < 0 {
			if got := Split(tt.line); !slices.Equal(got, tt.want) {
				t.Errorf("%s: Split(%q) = %q, want %q", tt.name, tt.line, got, tt.want)
			}
		}
		first, rest, ok := Cut(tt.line)
		if !ok || first != tt.want[0] || rest == "" {
			t.Errorf("%s: Cut(%q) = %q, %q, %v", tt.name, tt.line, first, rest, ok)
		}
	}
}
