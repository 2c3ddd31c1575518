// Package cdxj reads CDXJ index lines ("urlkey timestamp {json}", as
// pywb, warcio and the WACZ format write them) and resolves revisit
// records over them the way pywb 2.x does (Index.ResolvePywb), so tests
// can check what a replay tool would serve for each revisit.
package cdxj

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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

// Parse reads one CDXJ line.
func Parse(s string) (Line, error) {
	key, rest, ok1 := strings.Cut(s, " ")
	ts, js, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !strings.HasPrefix(js, "{") {
		return Line{}, fmt.Errorf("not a CDXJ line: %.100q", s)
	}
	var f struct {
		URL      string `json:"url"`
		Mime     string `json:"mime"`
		Status   string `json:"status"`
		Digest   string `json:"digest"`
		Filename string `json:"filename"`
		Offset   any    `json:"offset"`
		Length   any    `json:"length"`
	}
	if err := json.Unmarshal([]byte(js), &f); err != nil {
		return Line{}, fmt.Errorf("CDXJ line %.100q: %v", s, err)
	}
	l := Line{URLKey: key, Timestamp: ts, URL: f.URL, Mime: f.Mime, Status: f.Status, Digest: f.Digest, Filename: f.Filename, Raw: s}
	var err error
	if l.Offset, err = number(f.Offset); err != nil {
		return Line{}, fmt.Errorf("CDXJ line %.100q: offset: %v", s, err)
	}
	if l.Length, err = number(f.Length); err != nil {
		return Line{}, fmt.Errorf("CDXJ line %.100q: length: %v", s, err)
	}
	return l, nil
}

// number reads a JSON number or a string of digits (warcio writes
// strings); absent is -1.
func number(v any) (int64, error) {
	switch n := v.(type) {
	case nil:
		return -1, nil
	case float64:
		return int64(n), nil
	case string:
		return strconv.ParseInt(n, 10, 64)
	}
	return 0, fmt.Errorf("%v is no number", v)
}

// Read reads every line of a CDXJ stream; blank lines and lines starting
// with "!" (a header) are skipped. name is used in errors.
func Read(r io.Reader, name string) ([]Line, error) {
	var lines []Line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimRight(sc.Text(), "\r")
		if s == "" || strings.HasPrefix(s, "!") {
			continue
		}
		l, err := Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return lines, nil
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
