// Package cdxj holds CDXJ index lines ("urlkey timestamp {json}", as
// pywb, warcio and the WACZ format write them, read with package cdx) and
// resolves revisit records over them the way pywb 2.x does
// (Index.ResolvePywb), so tests can check what a replay tool would serve
// for each revisit.
package cdxj

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"warcdedup/cdx"
)

// Line is one CDXJ line: the key fields and the JSON fields replay tools
// read. Raw is the line as read, without its line feed.
type Line struct {
	URLKey    string
	Timestamp string // 14 digits, or fewer/more as written
	URL       string
	Mime      string // "warc/revisit" for a revisit
	Status    string
	Digest    string // as written, with or without an "sha1:" label
	Filename  string
	Offset    int64
	Length    int64
	Raw       string
}

// IsRevisit tells a revisit line, as pywb does (its mime).
func (l *Line) IsRevisit() bool { return l.Mime == "warc/revisit" }

// Parse reads one CDXJ line, as package cdx reads indexes.
func Parse(s string) (Line, error) {
	lines, err := Read(strings.NewReader(s+"\n"), "CDXJ line")
	if err != nil {
		return Line{}, err
	}
	if len(lines) != 1 {
		return Line{}, fmt.Errorf("not a CDXJ line: %.100q", s)
	}
	return lines[0], nil
}

// Read reads every capture line of a CDXJ stream with package cdx; other
// lines (a "!" header, blank lines) are skipped. name is used in errors.
func Read(r io.Reader, name string) ([]Line, error) {
	cr, err := cdx.NewReader(r, name, cdx.Options{Format: cdx.CDXJ})
	if err != nil {
		return nil, err
	}
	var lines []Line
	for {
		l, err := cr.Next()
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return nil, err
		}
		if l.Kind != cdx.Record {
			continue
		}
		lines = append(lines, Line{URLKey: string(l.URLKey), Timestamp: string(l.Timestamp), URL: string(l.URL),
			Mime: string(l.MIME), Status: string(l.Status), Digest: string(l.Digest), Filename: string(l.Filename),
			Offset: l.Offset, Length: l.Length, Raw: strings.TrimRight(string(l.Raw), "\r")})
	}
}

// Sort puts lines in CDXJ order: byte order of the whole line, as
// `LC_ALL=C sort` leaves an index.
func Sort(lines []Line) {
	slices.SortStableFunc(lines, func(a, b Line) int { return strings.Compare(a.Raw, b.Raw) })
}

// Write writes the lines, one a line.
func Write(w io.Writer, lines []Line) error {
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l.Raw)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WithFilename returns l with its JSON field "filename" set to name (the
// name of its file inside a WACZ, say), its Raw line rewritten to match.
func (l Line) WithFilename(name string) (Line, error) {
	key, rest, _ := strings.Cut(l.Raw, " ")
	ts, js, _ := strings.Cut(rest, " ")
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return l, err
	}
	fields["filename"] = name
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return l, err
	}
	l.Filename = name
	l.Raw = key + " " + ts + " " + strings.TrimRight(b.String(), "\n")
	return l, nil
}

// NormDigest is a digest without its algorithm label, upper case (base32
// SHA-1 is case-insensitive), the form lines are matched on.
func NormDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 {
		d = d[i+1:]
	}
	return strings.ToUpper(strings.TrimSpace(d))
}
