package verify_test

import (
	"strings"
	"testing"
)

// TestAfterListingARecordTwice proves that an after-manifest naming one
// record (file and offset) twice is refused, naming the manifest and the
// record: the comparison matches records by URI, date and digest, so the
// second line stood for another copy of the capture (a mirrored file) that
// the rewrite lost, and the proof said nothing was lost.
func TestAfterListingARecordTwice(t *testing.T) {
	tests := []struct {
		name          string
		before, after []string
		wantErr       string // "": no error and no violation
	}{
		{"a response listed twice hides its copy's loss",
			[]string{resp("a.warc", 0, uA, t1, dX), resp("b.warc", 0, uA, t1, dX)},
			[]string{resp("a.warc", 0, uA, t1, dX), resp("a.warc", 0, uA, t1, dX)},
			"after.manifest: a.warc offset 0 is listed twice"},
		{"a revisit listed twice hides its copy's loss",
			[]string{resp("a.warc", 0, uA, t1, dX), rev("a.warc", 500, uA, t2, dX, uA, t1), rev("b.warc", 500, uA, t2, dX, uA, t1)},
			[]string{resp("a.warc", 0, uA, t1, dX), rev("a.warc", 500, uA, t2, dX, uA, t1), rev("a.warc", 500, uA, t2, dX, uA, t1)},
			"after.manifest: a.warc offset 500 is listed twice"},
		{"one capture in two files, each listed once, is no error",
			[]string{resp("a.warc", 0, uA, t1, dX), resp("b.warc", 0, uA, t1, dX)},
			[]string{resp("b.warc", 0, uA, t1, dX), resp("a.warc", 0, uA, t1, dX)},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, violations, err := compare(tt.before, tt.after)
			if tt.wantErr == "" {
				if err != nil || len(violations) > 0 {
					t.Fatalf("error %v, violations %q; want neither", err, violations)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v (violations %q), want one saying %q", err, violations, tt.wantErr)
			}
		})
	}
}
