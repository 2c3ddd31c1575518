package manifest

import (
	"fmt"
	"strings"

	"warcdedup/record"
)

const hexDigits = "0123456789ABCDEF"

// EscapeField makes a URI or date safe for a manifest field: bytes 0x00-0x20
// and 0x7F become %XX so that a field never holds whitespace. Everything else
// is kept verbatim and nothing is ever decoded, so a URI stays the identifier
// the crawler wrote (the manifest spec, field 4).
func EscapeField(s string) string {
	return escape(s, false)
}

// EscapeFile makes a file path safe for field 1. Unlike EscapeField it also
// escapes '%', so that UnescapeFile gives back the exact path on disk.
func EscapeFile(s string) string {
	return escape(s, true)
}

func escape(s string, percent bool) string {
	needs := func(c byte) bool { return c <= 0x20 || c == 0x7F || (percent && c == '%') }
	i := 0
	for i < len(s) && !needs(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if needs(c) {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// URIField is field 4 for rec: its target URI without a wget-1.14 <...>
// wrapper, escaped. Every stage that reads a record back compares it with
// its line through this function.
func URIField(rec *record.Record) string { return EscapeField(rec.TargetURI()) }

// DateField is field 5 for rec: its date as written, escaped.
func DateField(rec *record.Record) string { return EscapeField(rec.Date) }

// UnescapeFile reverses EscapeFile.
func UnescapeFile(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", fmt.Errorf("file name %q: bad %%-escape at byte %d", s, i)
		}
		b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	}
	return -1
}
