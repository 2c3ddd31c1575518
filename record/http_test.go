package record

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadHTTPHead(t *testing.T) {
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
	tests := []struct {
		name     string
		block    string
		status   int
		complete bool
		head     string // Raw; the payload is the rest of the block
	}{
		{"status line with reason", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>\r\n\r\n</html>", 200, true,
			"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"},
		{"no reason phrase", "HTTP/1.0 302 \r\nLocation: http://example.com/\r\n\r\n", 302, true,
			"HTTP/1.0 302 \r\nLocation: http://example.com/\r\n\r\n"},
		{"HTTP/2 without minor version or reason", "HTTP/2 404\r\nServer: x\r\n\r\nnot found", 404, true,
			"HTTP/2 404\r\nServer: x\r\n\r\n"},
		{"LF-only head", "HTTP/1.1 200 OK\nContent-Type: text/plain\n\nbody\n\n", 200, true,
			"HTTP/1.1 200 OK\nContent-Type: text/plain\n\n"},
		{"CR CR LF head", "HTTP/1.0 200 OK\r\r\nServer: y\r\r\n\r\r\nbody", 200, true,
			"HTTP/1.0 200 OK\r\r\nServer: y\r\r\n\r\r\n"},
		{"lower-case protocol", "http/1.1 204 No Content\r\n\r\n", 204, true, "http/1.1 204 No Content\r\n\r\n"},
		{"empty payload", "HTTP/1.1 200 OK\r\n\r\n", 200, true, "HTTP/1.1 200 OK\r\n\r\n"},
		{"chunked body stored raw", chunked + "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n", 200, true, chunked},
		{"head without its blank line", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n", 200, false,
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"},
		{"head cut inside a line", "HTTP/1.1 500 Oops\r\nContent-Ty", 500, false, "HTTP/1.1 500 Oops\r\nContent-Ty"},
		{"status line only", "HTTP/1.1 301", 301, false, "HTTP/1.1 301"},
		{"request, not a response", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", 0, false, ""},
		{"plain text", "hello, world\r\n\r\n", 0, false, ""},
		{"status code not three digits", "HTTP/1.1 20 OK\r\n\r\n", 0, false, ""},
		{"status code not a number", "HTTP/1.1 abc OK\r\n\r\nx", 0, false, ""},
		{"status code 000", "HTTP/1.1 000 Zero\r\n\r\nx", 0, false, ""},
		{"version not a number", "HTTP/x.y 200 OK\r\n\r\nx", 0, false, ""},
		{"status on the next line", "HTTP/1.1\r\n200 OK\r\n\r\nx", 0, false, ""},
		{"empty block", "", 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := warcRec("WARC/1.0", "response", "http://next/", "HTTP/1.1 200 OK\r\n\r\nnext")
			for kind, f := range both(t, warcRec("WARC/1.0", "response", "http://x/", tt.block), next) {
				rr, _ := NewReader(bytes.NewReader(f.data), kind)
				if _, err := rr.Next(); err != nil {
					t.Fatal(err)
				}
				h, err := rr.ReadHTTPHead()
				if err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				if h.Status != tt.status || h.Complete != tt.complete || string(h.Raw) != tt.head {
					t.Errorf("%s: Status %d Complete %v Raw %q; want %d %v %q", kind, h.Status, h.Complete, h.Raw, tt.status, tt.complete, tt.head)
				}
				if rr.BlockLeft() != int64(len(tt.block)-len(tt.head)) {
					t.Errorf("%s: BlockLeft %d", kind, rr.BlockLeft())
				}
				var payload bytes.Buffer
				if _, err := rr.WriteTo(&payload); err != nil {
					t.Fatal(err)
				}
				if want := tt.block[len(tt.head):]; payload.String() != want {
					t.Errorf("%s: payload %q, want %q", kind, payload.String(), want)
				}
				if err := rr.Finish(); err != nil {
					t.Fatal(err)
				}
				// The head never reads into the next record.
				if r, err := rr.Next(); err != nil || r.URI != "http://next/" || r.Offset != f.off[1] {
					t.Fatalf("%s: next record: %v %v", kind, r, err)
				}
			}
		})
	}
}

func TestReadHTTPHeadMisuse(t *testing.T) {
	f := plainFile(warcRec("WARC/1.0", "response", "http://x/", "HTTP/1.1 200 OK\r\n\r\nbody"))
	rr, _ := NewReader(bytes.NewReader(f.data), "f")
	if _, err := rr.ReadHTTPHead(); err == nil {
		t.Error("ReadHTTPHead before Next")
	}
	if _, err := rr.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	_, err := rr.ReadHTTPHead()
	var e *Error
	if err == nil || errors.As(err, &e) {
		t.Errorf("ReadHTTPHead after Read: %v, want a usage error that is no damage", err)
	}
	if err := rr.Finish(); err != nil {
		t.Errorf("Finish: %v", err)
	}
}

// TestReadHTTPHeadTruncated: a block cut short inside the HTTP head is
// reported by ReadHTTPHead, once.
func TestReadHTTPHeadTruncated(t *testing.T) {
	full := warcRec("WARC/1.0", "response", "http://x/", "HTTP/1.1 200 OK\r\nServer: test\r\nContent-Type: text/plain\r\n\r\nbody")
	cut := full[:strings.Index(full, "Server")+3]
	for kind, f := range both(t, cut) {
		rr, _ := NewReader(bytes.NewReader(f.data), kind)
		if _, err := rr.Next(); err != nil {
			t.Fatal(err)
		}
		h, err := rr.ReadHTTPHead()
		if !errors.Is(err, ErrTruncated) || h.Complete {
			t.Errorf("%s: %v, Complete %v; want ErrTruncated", kind, err, h.Complete)
		}
		if _, err := rr.Next(); err != io.EOF {
			t.Errorf("%s: Next after the damage: %v, want io.EOF", kind, err)
		}
	}
}

// TestReadHTTPHeadTooLong: a head over the limit is reported, and the record
// can still be finished and the next one read.
func TestReadHTTPHeadTooLong(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("f", 1000)+"\r\n", maxHTTPHead/1000+10) + "\r\n"
	next := warcRec("WARC/1.0", "response", "http://next/", "HTTP/1.1 200 OK\r\n\r\nnext")
	for kind, f := range both(t, warcRec("WARC/1.0", "response", "http://x/", head+"body"), next) {
		rr, _ := NewReader(bytes.NewReader(f.data), kind)
		if _, err := rr.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := rr.ReadHTTPHead(); !errors.Is(err, ErrHeaderTooLong) {
			t.Errorf("%s: %v, want ErrHeaderTooLong", kind, err)
		}
		if err := rr.Finish(); err != nil {
			t.Errorf("%s: Finish: %v", kind, err)
		}
		if r, err := rr.Next(); err != nil || r.Offset != f.off[1] {
			t.Errorf("%s: next record: %v", kind, err)
		}
	}
}

func TestParseStatusLine(t *testing.T) {
	tests := []struct {
		line   string
		status int
		ok     bool
	}{
		{"HTTP/1.1 200 OK\r\n", 200, true},
		{"HTTP/1.0 302 \r\n", 302, true},
		{"HTTP/1.0 302\r\n", 302, true},
		{"HTTP/2 404", 404, true},
		{"HTTP/1.1 200", 200, true},
		{"HTTP/1.1 20", 0, false},
		{"HTTP/0 000", 0, false},
		{"HTTP/1.1 099 Low", 0, false},
		{"HTTP/1.1 100 Continue", 100, true},
		{"HTTP/1.1 2000 OK", 0, false},
		{"HTTP/ 200 OK", 0, false},
		{"HTTP/1.1  200 OK", 0, false},
		{"HTTPS/1.1 200 OK", 0, false},
		{"HTTP/1.1\n200 OK", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		status, ok := parseStatusLine([]byte(tt.line))
		if status != tt.status || ok != tt.ok {
			t.Errorf("%q: %d %v, want %d %v", tt.line, status, ok, tt.status, tt.ok)
		}
	}
}
