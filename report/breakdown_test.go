package report

import (
	"fmt"
	"slices"
	"testing"
)

// TestBreakdown proves the bounded account: labels past the limit are
// counted under Other, Top ranks by duplicate bytes and folds the rest into
// Other, Ordered follows the labels given.
func TestBreakdown(t *testing.T) {
	b := NewBreakdown(3)
	label := []byte("a")
	b.Add(string(label), Bucket{Records: 1, Duplicates: 1, DuplicateBytes: 10})
	label[0] = 'z' // a label's bytes reused by the caller
	b.Add("b", Bucket{Records: 1, Duplicates: 1, DuplicateBytes: 30})
	b.Add("c", Bucket{Records: 1, Duplicates: 1, DuplicateBytes: 20})
	b.Add("d", Bucket{Records: 1, Duplicates: 1, DuplicateBytes: 99}) // past the limit
	b.Add("a", Bucket{Records: 1})

	labels := func(bs []Bucket) (out []string) {
		for _, x := range bs {
			out = append(out, fmt.Sprintf("%s:%d/%d", x.Label, x.Records, x.DuplicateBytes))
		}
		return out
	}
	tests := []struct {
		name string
		got  []Bucket
		want []string
	}{
		{"top 2, the rest and what passed the limit as other", b.Top(2), []string{"b:1/30", "c:1/20", "other:3/109"}},
		{"top of all kept, other from the limit", b.Top(5), []string{"b:1/30", "c:1/20", "a:2/10", "other:1/99"}},
		{"in label order", b.Ordered(nil), []string{"a:2/10", "b:1/30", "c:1/20"}},
		{"in the order given, absent labels left out", b.Ordered([]string{"c", "x", "a"}), []string{"c:1/20", "a:2/10"}},
	}
	for _, tt := range tests {
		if got := labels(tt.got); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestHostOf(t *testing.T) {
	tests := []struct{ uri, want string }{
		{"http://Example.ORG/a?b", "example.org"},
		{"https://user:pw@www.example.org:8443/", "www.example.org"},
		{"http://[::1]:8080/x", "[::1]"},
		{"http://[::1]/x", "[::1]"},
		{"dns:example.org", "(dns)"},
		{"nothing", "(none)"},
	}
	for _, tt := range tests {
		if got := HostOf(tt.uri); got != tt.want {
			t.Errorf("HostOf(%q) = %q, want %q", tt.uri, got, tt.want)
		}
	}
}

func TestSizeClass(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{{0, "< 1 kB"}, {999, "< 1 kB"}, {1000, "1-10 kB"}, {99_999_999, "10-100 MB"}, {1 << 40, ">= 100 MB"}}
	for _, tt := range tests {
		if got := SizeClass(tt.n); got != tt.want {
			t.Errorf("SizeClass(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := SizeLabels(); len(got) != 7 || got[0] != "< 1 kB" || got[6] != ">= 100 MB" {
		t.Errorf("SizeLabels() = %v", got)
	}
}

// TestLargest proves that the classes kept are the largest offered, in
// order, ties by digest, however many are offered.
func TestLargest(t *testing.T) {
	l := NewLargest(3)
	for i, n := range []int64{5, 50, 1, 40, 50, 7, 2} {
		l.Offer(Class{Digest: fmt.Sprintf("d%d", i), DuplicateBytes: n})
	}
	var got []string
	for _, c := range l.Classes() {
		got = append(got, fmt.Sprintf("%s:%d", c.Digest, c.DuplicateBytes))
	}
	if want := []string{"d1:50", "d4:50", "d3:40"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if NewLargest(3).Classes() != nil {
		t.Errorf("no class offered, but some kept")
	}
}
