package policy

import (
	"testing"

	"warcdedup/record"
)

// TestKey proves which captures the policies take for replay-equivalent:
// under replay, the same container, status, type, encoding, transfer
// coding, disposition and redirect target (type and encoding compared
// without case and blanks); under payload, any; under uri, the same URI.
func TestKey(t *testing.T) {
	rec := func(format record.Format, version, uri string) *record.Record {
		return &record.Record{Format: format, Version: version, URI: uri}
	}
	head := func(raw string) *record.HTTPHead {
		h := &record.HTTPHead{Raw: []byte(raw), Complete: true}
		h.Status = int(raw[9]-'0')*100 + int(raw[10]-'0')*10 + int(raw[11]-'0')
		return h
	}
	warc := rec(record.WARC, "WARC/1.0", "http://a/")
	base := head("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\nServer: x\r\n\r\n")
	tests := []struct {
		name string
		pol  Policy
		rec  *record.Record
		head *record.HTTPHead
		same bool
	}{
		{"another server and URI", Replay, rec(record.WARC, "WARC/1.1", "http://b/"), head("HTTP/1.1 200 OK\r\nContent-Type: text/html;charset=utf-8\r\nServer: y\r\n\r\n"), true},
		{"folded and spaced type", Replay, warc, head("HTTP/1.1 200 OK\r\ncontent-type:  TEXT/HTML;\r\n  charset=UTF-8\r\n\r\n"), true},
		{"203", Replay, warc, head("HTTP/1.1 203 Non-Authoritative Information\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n"), false},
		{"another type", Replay, warc, head("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\n"), false},
		{"a charset less", Replay, warc, head("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), false},
		{"gzip encoded", Replay, warc, head("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\nContent-Encoding: gzip\r\n\r\n"), false},
		{"chunked", Replay, warc, head("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\nTransfer-Encoding: chunked\r\n\r\n"), false},
		{"an attachment", Replay, warc, head("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\nContent-Disposition: attachment\r\n\r\n"), false},
		{"in an ARC file", Replay, rec(record.ARC, "1", "http://a/"), base, false},
		{"in a WARC/0.18 file", Replay, rec(record.WARC, "WARC/0.18", "http://a/"), base, false},
		{"payload: another status and file format", Payload, rec(record.ARC, "1", "http://b/"), head("HTTP/1.1 203 X\r\n\r\n"), true},
		{"uri: same URI, another status", URI, warc, head("HTTP/1.1 203 X\r\n\r\n"), true},
		{"uri: another URI", URI, rec(record.WARC, "WARC/1.0", "http://b/"), base, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.pol.Key(warc, base), tt.pol.Key(tt.rec, tt.head)
			if (a == b) != tt.same {
				t.Errorf("keys %q and %q: same %v, want %v", Describe(a), Describe(b), a == b, tt.same)
			}
		})
	}
}
