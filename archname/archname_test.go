package archname

import "testing"

func TestNames(t *testing.T) {
	for _, c := range []struct {
		name         string
		archive, arc bool
	}{
		{"a.warc", true, false},
		{"dir/a.warc.gz", true, false},
		{"A.WARC.GZ", true, false},
		{"a.arc", true, true},
		{"a.arc.gz", true, true},
		{"IA-001.ARC", true, true},
		{"a.Arc.Gz", true, true},
		{"a.warc.gz.open", false, false},
		{"a.wacz", false, false},
		{"a.cdx", false, false},
		{"a.gz", false, false},
		{"arc", false, false},
		{"", false, false},
	} {
		if got := IsArchive(c.name); got != c.archive {
			t.Errorf("IsArchive(%q) = %v, want %v", c.name, got, c.archive)
		}
		if got := IsARC(c.name); got != c.arc {
			t.Errorf("IsARC(%q) = %v, want %v", c.name, got, c.arc)
		}
	}
}
