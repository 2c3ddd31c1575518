package warcindex

import (
	"strings"
	"testing"
)

// TestTimestamp proves that a record's timestamp is its WARC-Date without
// "-", ":" and "T", cut at 14 characters, as the strings.Replacer it
// replaces made it, for dates well formed, short, long and odd.
func TestTimestamp(t *testing.T) {
	was := func(date string) string {
		d := strings.NewReplacer("-", "", ":", "", "T", "").Replace(date)
		return d[:min(len(d), 14)]
	}
	for _, date := range []string{
		"2024-05-06T07:08:09Z", "2024-05-06T07:08:09.123456Z", "2024-05-06", "", "T", "--::TT",
		"20240506070809", "2024-05-06T07:08:09+02:00", "2024-05-06t07:08:09z", "é2024-05-06T07:08", "2024-05-06T07:08:0",
	} {
		if got, want := timestamp(date), was(date); got != want {
			t.Errorf("%q: %q, want %q", date, got, want)
		}
	}
}
