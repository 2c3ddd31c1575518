package record_test

import (
	"bytes"
	"io"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/record"
)

// TestRawHeaderAndTrailer proves that a Reader keeping headers gives each
// record's header as stored (line ends and spacing included) and the line
// ends after its block, in a plain and a gzip file, what undo restores.
func TestRawHeaderAndTrailer(t *testing.T) {
	tests := []struct {
		name, header, trailer string
		whole                 bool
	}{
		{"CRLF header, CRLF CRLF", "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\n", "\r\n\r\n", true},
		{"LF header, LF LF", "WARC/0.18\nWARC-Type: resource\nContent-Length: 3\n\n", "\n\n", true},
		{"odd spacing, folded line", "WARC/1.0\r\nWARC-Type:resource \r\nX-Note: a\r\n  b\r\nContent-Length: 3\r\n\r\n", "\r\n", true},
		{"no record end", "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\n", "", true},
		{"too many line ends to keep", "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\n", string(bytes.Repeat([]byte("\r\n"), 100)), false},
	}
	for _, tt := range tests {
		rec := tt.header + "abc" + tt.trailer
		for _, file := range []struct {
			kind string
			data []byte
		}{{"plain", []byte(rec + rec)}, {"gzip", warctest.Gzip(rec, rec)}} {
			t.Run(tt.name+"/"+file.kind, func(t *testing.T) {
				rr, err := record.NewReader(bytes.NewReader(file.data), "f")
				if err != nil {
					t.Fatal(err)
				}
				rr.KeepHeaders(true)
				for i := 0; ; i++ {
					_, err := rr.Next()
					if err == io.EOF {
						if i != 2 {
							t.Errorf("%d records, want 2", i)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if got := string(rr.RawHeader()); got != tt.header {
						t.Errorf("record %d: RawHeader %q, want %q", i, got, tt.header)
					}
					if err := rr.Finish(); err != nil {
						t.Fatal(err)
					}
					got, whole := rr.Trailer()
					if whole != tt.whole || whole && string(got) != tt.trailer {
						t.Errorf("record %d: Trailer %q, whole %v; want %q, %v", i, got, whole, tt.trailer, tt.whole)
					}
				}
			})
		}
	}
}
