package record

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// readARCHeader reads an ARC record line. Fields are taken from the right,
// because URLs may contain spaces: v1 lines end in IP, date, content type and
// length; v2 lines add result code, checksum, location, offset and file name
// before the length. Alexa-style lines with four fields (no content type)
// and dashes for missing values are accepted.
func (r *Reader) readARCHeader() error {
	total := 0
	line, err := r.readLine(&total)
	if err != nil {
		return err
	}
	rec := &r.rec
	f, ok := parseARCLine(line, r.arcVersion)
	if !ok {
		return fmt.Errorf("%w: %q is not an ARC record line", ErrNoRecord, clip(line))
	}
	n, err := strconv.ParseInt(f.length, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: ARC length %q is not a length", ErrBadHeader, clip([]byte(f.length)))
	}
	rec.ARCLine = string(line)
	rec.ARCFields = f.ARCFields
	rec.URI = f.URL
	rec.Date = arcDate(f.Date)
	rec.BlockLength = n
	switch {
	case strings.HasPrefix(f.URL, "filedesc:"):
		rec.Type = "filedesc"
		// The version block follows: "1 0 InternetArchive", "2 0 Alexa Internet".
		if v, _ := r.br.Peek(min(int(n), 2)); len(v) == 2 && v[1] == ' ' && (v[0] == '1' || v[0] == '2') {
			r.arcVersion = int(v[0] - '0')
		}
	case r.blockStartsHTTP():
		rec.Type = "response"
	default:
		rec.Type = "resource"
	}
	if r.arcVersion == 0 {
		r.arcVersion = 1
	}
	rec.Version = strconv.Itoa(r.arcVersion)
	return nil
}

type arcLine struct {
	ARCFields
	length string
}

// parseARCLine splits a record line. Fields are taken from the right. A v1
// file expects the five-field form, a v2 file the ten-field form, and a file
// whose version is not known yet (version 0: its filedesc line) tries the
// ten-field form first; a line of the other form, or the four-field Alexa
// form, is still accepted when its fields leave no doubt.
func parseARCLine(line []byte, version int) (arcLine, bool) {
	if len(line) == 0 || len(line) > maxARCLineLen || bytes.IndexByte(line, 0) >= 0 {
		return arcLine{}, false
	}
	f := strings.Split(string(bytes.TrimRight(line, " \t\r")), " ")
	forms := [...]int{10, 5, 4}
	if version == 1 {
		forms = [...]int{5, 4, 10}
	}
	for _, n := range forms {
		if a, ok := arcFields(f, n); ok {
			return a, true
		}
	}
	return arcLine{}, false
}

// arcFields reads f as a record line of n fields (10, 5 or 4), the URL
// taking whatever the others leave.
func arcFields(f []string, n int) (arcLine, bool) {
	k := len(f)
	if k < n {
		return arcLine{}, false
	}
	var a arcLine
	a.URL = strings.Join(f[:k-n+1], " ")
	a.length = f[k-1]
	switch n {
	case 10:
		a.IP, a.Date, a.ContentType, a.ResultCode, a.Checksum, a.Location, a.Offset, a.Filename = f[k-9], f[k-8], f[k-7], f[k-6], f[k-5], f[k-4], f[k-3], f[k-2]
	case 5:
		a.IP, a.Date, a.ContentType = f[k-4], f[k-3], f[k-2]
	case 4: // Alexa: URL IP date length
		a.IP, a.Date = f[k-3], f[k-2]
	}
	if !strings.Contains(a.URL, ":") || !isARCDate(a.Date) {
		return arcLine{}, false
	}
	// The length may be padded or negative in broken files; it must at least
	// look like a number for the line to be a record line.
	l := strings.TrimLeft(a.length, "-")
	if l == "" || strings.Trim(l, "0123456789") != "" {
		return arcLine{}, false
	}
	return a, true
}

// isARCDate accepts what real files hold in the date field: 14 digits, fewer
// or more digits (cut or padded later), or a dash for a missing date.
func isARCDate(s string) bool {
	if s == "-" {
		return true
	}
	return len(s) >= 4 && len(s) <= 20 && strings.Trim(s, "0123456789") == ""
}

// arcDate writes an ARC date as WARC-Date: "20140216050221" becomes
// "2014-02-16T05:02:21Z". A short date is padded with the earliest instant
// it stands for, a long one cut to 14 digits (records.md section 4); a
// missing date gives "".
func arcDate(s string) string {
	if s == "-" || len(s) < 4 {
		return ""
	}
	const earliest = "00000101000000"
	if len(s) < 14 {
		s += earliest[len(s):]
	}
	s = s[:14]
	return s[0:4] + "-" + s[4:6] + "-" + s[6:8] + "T" + s[8:10] + ":" + s[10:12] + ":" + s[12:14] + "Z"
}

// looksLikeARCLine is the test used to find the next record after damage.
func looksLikeARCLine(line []byte, version int) bool {
	_, ok := parseARCLine(bytes.TrimRight(line, "\r\n"), version)
	return ok
}
