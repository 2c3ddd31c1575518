package record

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// HTTPHead is the HTTP status line and header lines at the start of a block,
// as stored.
type HTTPHead struct {
	// Status is the status code, 0 if the block does not start with an HTTP
	// response status line.
	Status int
	// Raw holds the head byte for byte, through the blank line that ends it.
	// It is only valid until the next call to ReadHTTPHead or Next.
	Raw []byte
	// Complete is false when the block ended before the blank line.
	Complete bool
}

// ReadHTTPHead reads the HTTP head of the current record's block, which must
// not have been read from yet. The payload, in the sense of
// WARC-Payload-Digest, is what remains of the block afterwards: the entity
// body as stored, chunked framing and content coding included. A block that
// is no HTTP response is left unread and gives Status 0.
func (r *Reader) ReadHTTPHead() (*HTTPHead, error) {
	h := &r.http
	h.Status, h.Raw, h.Complete = 0, h.Raw[:0], false
	if r.st != inRecord || r.blockLeft != r.rec.BlockLength {
		return nil, fmt.Errorf("record: ReadHTTPHead after the block was read from")
	}
	first, _ := r.br.Peek(int(min(r.blockLeft, 32)))
	status, ok := parseStatusLine(first)
	if !ok {
		return h, nil
	}
	h.Status = status
	for r.blockLeft > 0 {
		start := len(h.Raw)
		line, err := r.readBlockLine(h.Raw)
		h.Raw = line
		if err != nil {
			return h, err
		}
		if len(h.Raw) > maxHTTPHead {
			return h, r.errorAt(r.rec.Offset, fmt.Errorf("%w: HTTP head over %d bytes", ErrHeaderTooLong, maxHTTPHead))
		}
		// An empty line (LF, CR LF, or CR CR LF) after the status line ends
		// the head.
		if start > 0 && onlyLineEnds(h.Raw[start:]) && h.Raw[len(h.Raw)-1] == '\n' {
			h.Complete = true
			return h, nil
		}
	}
	return h, nil
}

// onlyLineEnds reports whether b holds nothing but CR and LF bytes.
func onlyLineEnds(b []byte) bool {
	for _, c := range b {
		if c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// readBlockLine appends the next line of the block, with its LF, to dst,
// without reading past the block.
func (r *Reader) readBlockLine(dst []byte) ([]byte, error) {
	for r.blockLeft > 0 {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF {
					return dst, r.truncated()
				}
				return dst, r.fail(err)
			}
		}
		// Only what is buffered: asking for more would make the buffer
		// slide and refill for every line.
		buf, _ := r.br.Peek(int(min(int64(r.br.Buffered()), r.blockLeft)))
		n, found := len(buf), false
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			n, found = i+1, true
		}
		dst = append(dst, buf[:n]...)
		r.discard(n)
		r.blockLeft -= int64(n)
		if found || len(dst) > maxHTTPHead {
			return dst, nil
		}
	}
	return dst, nil
}

// parseStatusLine reads an HTTP response status line, "HTTP/x.y NNN" (a
// code from 100 to 999) and an optional reason phrase, from the start of b,
// which may be cut short after the code.
func parseStatusLine(b []byte) (int, bool) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) < 5 || !bytes.EqualFold(b[:5], []byte("HTTP/")) {
		return 0, false
	}
	sp := bytes.IndexByte(b, ' ')
	if sp < 6 || len(b) < sp+4 {
		return 0, false
	}
	for _, c := range b[5:sp] { // the version: "1.1", "1.0", "2"
		if (c < '0' || c > '9') && c != '.' {
			return 0, false
		}
	}
	code := b[sp+1 : sp+4]
	status := 0
	for _, c := range code {
		if c < '0' || c > '9' {
			return 0, false
		}
		status = status*10 + int(c-'0')
	}
	if len(b) > sp+4 && b[sp+4] != ' ' && b[sp+4] != '\r' {
		return 0, false
	}
	if status < 100 {
		// No status code: Status 0 must keep meaning "no HTTP response".
		return 0, false
	}
	return status, true
}

// Get returns the value of the HTTP header field name (case-insensitive),
// its repetitions joined with ", " as HTTP allows, without surrounding
// blanks; "" when the head has none. Folded lines are joined with a space.
func (h *HTTPHead) Get(name string) string {
	var values []string
	lines := h.Raw
	// Skip the status line.
	if i := bytes.IndexByte(lines, '\n'); i >= 0 {
		lines = lines[i+1:]
	} else {
		return ""
	}
	matching := false
	for len(lines) > 0 {
		line := lines
		if i := bytes.IndexByte(lines, '\n'); i >= 0 {
			line, lines = lines[:i], lines[i+1:]
		} else {
			lines = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if matching && len(values) > 0 {
				values[len(values)-1] += " " + string(bytes.TrimSpace(line))
			}
			continue
		}
		colon := bytes.IndexByte(line, ':')
		matching = colon > 0 && bytes.EqualFold(bytes.TrimSpace(line[:colon]), []byte(name))
		if matching {
			values = append(values, string(bytes.TrimSpace(line[colon+1:])))
		}
	}
	return strings.Join(values, ", ")
}
