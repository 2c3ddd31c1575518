package refs

import (
	"testing"

	"warcdedup/record"
)

func TestInWrittenForm(t *testing.T) {
	f := func(names ...string) record.Header {
		var h record.Header
		for _, n := range names {
			v := "x"
			if n == "WARC-Truncated" {
				v = "length"
			}
			h = append(h, record.Field{Name: n, Value: v})
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    record.Header
		want bool
	}{
		{"as Revisit.Bytes inserts them", f("WARC-Type", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated", "Content-Type"), true},
		{"with the payload digest it adds", f("WARC-Type", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Payload-Digest", "WARC-Truncated"), true},
		{"a Warcdedup- field", f("WARC-Type", "Warcdedup-Added-Fields"), true},
		{"another order (Heritrix's)", f("WARC-Type", "WARC-Payload-Digest", "WARC-Profile", "WARC-Truncated", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date"), false},
		{"no WARC-Truncated (warcio's)", f("WARC-Type", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "Content-Type"), false},
		{"a response", f("WARC-Type", "WARC-Target-URI", "Content-Type"), false},
	} {
		if got := InWrittenForm(tc.h); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	h := f("WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated")
	h[3].Value = "time"
	if InWrittenForm(h) {
		t.Error("WARC-Truncated: time taken for the form written")
	}
}
