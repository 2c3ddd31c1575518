package stage

import (
	"context"
	"fmt"
	"testing"

	"warcdedup/manifest"
)

// TestRevisitOriginsBounded proves that one digest's revisits hold at
// most maxWaitingOrigins originals, whatever their number (a payload
// served at many URLs), that those past the bound are counted, and that
// a revisit of an original already waiting is still taken.
func TestRevisitOriginsBounded(t *testing.T) {
	tests := []struct {
		name          string
		originals     int
		wantWaiting   int
		wantUnchecked int64
	}{
		{"under the bound", 10, 10, 0},
		{"at the bound", maxWaitingOrigins, maxWaitingOrigins, 0},
		{"a payload at many URLs", 3 * maxWaitingOrigins, maxWaitingOrigins, 2 * maxWaitingOrigins},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := &PackageRewrite{}
			o := pr.newRevisitOrigins(context.Background())
			m := PackageMember{Package: "a.wacz", Path: "/c/a.wacz"}
			for i := range tt.originals {
				l := &manifest.Line{File: "a.wacz#archive/x.warc.gz", RefURI: fmt.Sprintf("http://example.com/%d", i), RefDate: "2024-01-01T00:00:00Z"}
				o.revisit(l, m)
			}
			// An original already waiting is taken from another package.
			o.revisit(&manifest.Line{File: "b.wacz#archive/y.warc.gz", RefURI: "http://example.com/0", RefDate: "2024-01-01T00:00:00Z"},
				PackageMember{Package: "b.wacz", Path: "/c/b.wacz"})
			if len(o.waiting) != tt.wantWaiting || o.unchecked != tt.wantUnchecked {
				t.Errorf("waiting %d, unchecked %d; want %d, %d", len(o.waiting), o.unchecked, tt.wantWaiting, tt.wantUnchecked)
			}
			if len(o.waiting[[2]string{"http://example.com/0", "2024-01-01T00:00:00Z"}]) != 2 {
				t.Errorf("the first original is waited for by %v, want both packages", o.waiting[[2]string{"http://example.com/0", "2024-01-01T00:00:00Z"}])
			}
		})
	}
}
