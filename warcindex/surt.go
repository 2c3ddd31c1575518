package warcindex

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// SURT returns the urlkey warcio.js 2.x (getSurt, the indexer of
// ArchiveWeb.page, Browsertrix and `warcio cdx-index`) gives url: for an
// http or https URL, "www", "www2", ... removed from the host (only when
// spelt in lower case, as warcio.js does it), the URL lower-cased and
// parsed as a WHATWG URL, then the host's labels reversed and joined with
// ",", the port if it is not the scheme's, ")", the path, and the query's
// arguments sorted; the fragment is dropped. Any other URL, and one the
// WHATWG parser rejects, is returned as it is.
//
// The parser here is the WHATWG one for http and https URLs, with two
// simplifications, both for non-ASCII hosts: a label is lower-cased and
// Punycode-encoded without the rest of UTS #46 mapping (no NFC, no
// mapping of full-width dots), and a host that UTS #46 would reject is
// encoded all the same. The tests compare it with warcio.js.
func SURT(url string) string {
	if !strings.HasPrefix(url, "https:") && !strings.HasPrefix(url, "http:") {
		return url
	}
	url = stripWWW(url)
	u, ok := parseSpecialURL(strings.ToLower(url))
	if !ok {
		return url
	}
	var b strings.Builder
	b.Grow(len(url) + 8)
	labels := strings.Split(u.host, ".")
	for i := len(labels) - 1; i >= 0; i-- {
		b.WriteString(labels[i])
		if i > 0 {
			b.WriteByte(',')
		}
	}
	if u.port != "" {
		b.WriteByte(':')
		b.WriteString(u.port)
	}
	b.WriteByte(')')
	b.WriteString(u.path)
	if u.query != "" {
		args := strings.Split(u.query, "&")
		sortStrings(args)
		b.WriteByte('?')
		b.WriteString(strings.Join(args, "&"))
	}
	return b.String()
}

// sortStrings sorts in byte order, which is JavaScript's default sort
// (UTF-16 code units) for the ASCII the parser leaves in a query.
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// stripWWW removes "www" and any digits after it, and the dot, from the
// start of the host: warcio.js's /^(https?:\/\/)www\d*\./ on the URL as
// written, case-sensitive.
func stripWWW(url string) string {
	rest, scheme := url, ""
	switch {
	case strings.HasPrefix(url, "http://"):
		scheme, rest = "http://", url[7:]
	case strings.HasPrefix(url, "https://"):
		scheme, rest = "https://", url[8:]
	default:
		return url
	}
	if !strings.HasPrefix(rest, "www") {
		return url
	}
	i := 3
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i < len(rest) && rest[i] == '.' {
		return scheme + rest[i+1:]
	}
	return url
}

// specialURL is what SURT needs of a parsed http(s) URL, serialized as
// the WHATWG URL object gives hostname, port, pathname and search
// (without its "?").
type specialURL struct {
	host, port, path, query string
}

// parseSpecialURL parses s, an http: or https: URL, as the WHATWG URL
// parser does; ok is false where it fails.
func parseSpecialURL(s string) (specialURL, bool) {
	var u specialURL
	// Leading and trailing C0 controls and spaces go, and every tab and
	// line break anywhere.
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	var defaultPort string
	switch {
	case strings.HasPrefix(s, "http:"):
		s, defaultPort = s[5:], "80"
	case strings.HasPrefix(s, "https:"):
		s, defaultPort = s[6:], "443"
	default:
		return u, false
	}
	// Any number of slashes and backslashes before the authority.
	s = strings.TrimLeft(s, `/\`)
	end := strings.IndexAny(s, `/\?#`)
	if end < 0 {
		end = len(s)
	}
	authority, rest := s[:end], s[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:] // credentials are no part of the key
	}
	hostPart, port := authority, ""
	inBrackets := false
	for i := 0; i < len(authority); i++ {
		switch authority[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				hostPart, port = authority[:i], authority[i+1:]
				i = len(authority)
			}
		}
	}
	if hostPart == "" {
		return u, false
	}
	if port != "" {
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return u, false
			}
		}
		n, err := strconv.ParseUint(strings.TrimLeft(port, "0")+"0", 10, 32)
		if err != nil || n/10 > 65535 {
			return u, false
		}
		port = strconv.FormatUint(n/10, 10)
		if port == defaultPort {
			port = ""
		}
	}
	host, ok := parseHost(hostPart)
	if !ok {
		return u, false
	}
	u.host, u.port = host, port

	pathPart, query := rest, ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		pathPart = rest[:i]
		if rest[i] == '?' {
			query = rest[i+1:]
			if j := strings.IndexByte(query, '#'); j >= 0 {
				query = query[:j]
			}
		}
	}
	u.path = parsePath(pathPart)
	u.query = percentEncode(query, inQuerySet)
	return u, true
}

// parsePath is the WHATWG path state for a special URL: segments split
// at "/" and "\", "." and ".." (also spelt with %2e) resolved, each
// segment percent-encoded.
func parsePath(p string) string {
	if p != "" && (p[0] == '/' || p[0] == '\\') {
		p = p[1:]
	}
	var segs []string
	for {
		i := strings.IndexAny(p, `/\`)
		seg, last := p, true
		if i >= 0 {
			seg, p, last = p[:i], p[i+1:], false
		}
		switch {
		case isDoubleDot(seg):
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case isSingleDot(seg):
			if last {
				segs = append(segs, "")
			}
		default:
			segs = append(segs, percentEncode(seg, inPathSet))
		}
		if last {
			break
		}
	}
	return "/" + strings.Join(segs, "/")
}

func isSingleDot(s string) bool { return s == "." || strings.EqualFold(s, "%2e") }

func isDoubleDot(s string) bool {
	switch strings.ToLower(s) {
	case "..", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

func inPathSet(c rune) bool {
	switch c {
	case ' ', '"', '#', '<', '>', '?', '`', '{', '}':
		return true
	}
	return c < 0x20 || c > 0x7e
}

func inQuerySet(c rune) bool {
	switch c {
	case ' ', '"', '#', '<', '>', '\'':
		return true
	}
	return c < 0x20 || c > 0x7e
}

// percentEncode writes each code point of s in the set as the %XX of its
// UTF-8 bytes (upper-case hex); bytes that are no UTF-8 are U+FFFD, as
// they are once a header is decoded in JavaScript.
func percentEncode(s string, in func(rune) bool) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && !in(rune(s[i])) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	var buf [utf8.UTFMax]byte
	for _, r := range s[i:] {
		if !in(r) {
			b.WriteRune(r)
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		for _, c := range buf[:n] {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

// parseHost is the WHATWG host parser for a special URL (already lower
// case): an IPv6 address in brackets, else the percent-decoded domain
// turned to ASCII, which must hold no forbidden code point, and is an
// IPv4 address when it ends in a number.
func parseHost(h string) (string, bool) {
	if h[0] == '[' {
		if h[len(h)-1] != ']' {
			return "", false
		}
		a, ok := parseIPv6(h[1 : len(h)-1])
		if !ok {
			return "", false
		}
		return "[" + a + "]", true
	}
	domain := percentDecode(h)
	if !utf8.ValidString(domain) {
		domain = strings.ToValidUTF8(domain, "\uFFFD")
	}
	ascii, ok := domainToASCII(domain)
	if !ok {
		return "", false
	}
	for i := 0; i < len(ascii); i++ {
		switch c := ascii[i]; c {
		case ' ', '#', '%', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|':
			return "", false
		default:
			if c < 0x20 || c == 0x7f {
				return "", false
			}
		}
	}
	if endsInNumber(ascii) {
		return parseIPv4(ascii)
	}
	return ascii, true
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && unhex(s[i+1]) >= 0 && unhex(s[i+2]) >= 0 {
			b = append(b, byte(unhex(s[i+1])<<4|unhex(s[i+2])))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// domainToASCII lower-cases the domain and Punycode-encodes its
// non-ASCII labels.
func domainToASCII(d string) (string, bool) {
	ascii := true
	for i := 0; i < len(d); i++ {
		if d[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(d), true
	}
	labels := strings.Split(strings.ToLower(d), ".")
	for i, l := range labels {
		if isASCII(l) {
			continue
		}
		enc, ok := punycode(l)
		if !ok {
			return "", false
		}
		labels[i] = "xn--" + enc
	}
	return strings.Join(labels, "."), true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// endsInNumber is the WHATWG "ends in a number checker".
func endsInNumber(h string) bool {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4Number reads one part of an IPv4 address: decimal, 0x hex or
// 0-prefixed octal. Values too large for 64 bits saturate (they fail the
// range checks anyway).
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, radix = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, radix = s[1:], 8
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d := uint64(unhex(s[i]))
		if unhex(s[i]) < 0 || d >= radix {
			return 0, false
		}
		if n > 1<<56 {
			n = 1 << 60 // saturate
			continue
		}
		n = n*radix + d
	}
	return n, true
}

func parseIPv4(h string) (string, bool) {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return "", false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	ipv4 := last
	for i, n := range nums[:len(nums)-1] {
		ipv4 += n << (8 * (3 - i))
	}
	return strconv.FormatUint(ipv4>>24, 10) + "." + strconv.FormatUint(ipv4>>16&255, 10) + "." +
		strconv.FormatUint(ipv4>>8&255, 10) + "." + strconv.FormatUint(ipv4&255, 10), true
}

// parseIPv6 parses the text between brackets and serializes it as the
// WHATWG URL does: lower-case hex pieces, the first longest run of two or
// more zero pieces compressed to "::", an embedded IPv4 part as hex.
func parseIPv6(s string) (string, bool) {
	p := ipv6Parser{s: s, compress: -1}
	if !p.parse() {
		return "", false
	}
	return formatIPv6(&p.pieces), true
}

// ipv6Parser is the WHATWG URL's IPv6 parser: the text s read from i, n
// pieces read so far, compress the place of the "::" (-1 if none yet).
type ipv6Parser struct {
	s        string
	i, n     int
	compress int
	pieces   [8]uint16
}

// parse reads the whole text: a leading "::", then pieces, "::" and an
// IPv4 part in turn; then spreads the pieces around the "::".
func (p *ipv6Parser) parse() bool {
	if strings.HasPrefix(p.s, ":") {
		if !strings.HasPrefix(p.s, "::") {
			return false
		}
		p.i = 2
		p.n++
		p.compress = p.n
	}
	for p.i < len(p.s) {
		if !p.next() {
			return false
		}
	}
	return p.expand()
}

// next reads what starts at i: a "::" (its second colon), a piece of up
// to four hex digits and the colon after it, or the IPv4 part that ends
// the address.
func (p *ipv6Parser) next() bool {
	if p.n == 8 {
		return false
	}
	s := p.s
	if s[p.i] == ':' {
		if p.compress >= 0 {
			return false
		}
		p.i++
		p.n++
		p.compress = p.n
		return true
	}
	v, length := 0, 0
	for length < 4 && p.i < len(s) && unhex(s[p.i]) >= 0 {
		v = v*16 + unhex(s[p.i])
		p.i++
		length++
	}
	if p.i < len(s) && s[p.i] == '.' {
		// An IPv4 part ends the address.
		if length == 0 || p.n > 6 {
			return false
		}
		return p.ipv4(p.i - length)
	}
	if p.i < len(s) {
		if s[p.i] != ':' {
			return false
		}
		p.i++
		if p.i == len(s) {
			return false
		}
	}
	p.pieces[p.n] = uint16(v)
	p.n++
	return true
}

// ipv4 reads the rest of the text from at, four decimal parts without
// leading zeros, as the last two pieces.
func (p *ipv6Parser) ipv4(at int) bool {
	parts := strings.Split(p.s[at:], ".")
	if len(parts) != 4 {
		return false
	}
	var b [4]int
	for k, part := range parts {
		if part == "" || len(part) > 1 && part[0] == '0' || len(part) > 3 || strings.Trim(part, "0123456789") != "" {
			return false
		}
		b[k], _ = strconv.Atoi(part)
		if b[k] > 255 {
			return false
		}
	}
	p.pieces[p.n] = uint16(b[0]<<8 | b[1])
	p.pieces[p.n+1] = uint16(b[2]<<8 | b[3])
	p.n += 2
	p.i = len(p.s)
	return true
}

// expand moves the pieces read after the "::" to the end, leaving zeros
// in their place; an address without one must have read eight.
func (p *ipv6Parser) expand() bool {
	if p.compress < 0 {
		return p.n == 8
	}
	swaps := p.n - p.compress
	n := 7
	for n != 0 && swaps > 0 {
		p.pieces[n], p.pieces[p.compress+swaps-1] = p.pieces[p.compress+swaps-1], p.pieces[n]
		n--
		swaps--
	}
	return true
}

// formatIPv6 writes the pieces in hex, the first longest run of zero
// pieces (if longer than one) as "::".
func formatIPv6(pieces *[8]uint16) string {
	best, bestLen := longestZeros(pieces)
	var b strings.Builder
	for i := 0; i < 8; i++ {
		if i == best {
			if i == 0 {
				b.WriteString("::")
			} else {
				b.WriteByte(':')
			}
			i += bestLen - 1
			continue
		}
		b.WriteString(strconv.FormatUint(uint64(pieces[i]), 16))
		if i < 7 {
			b.WriteByte(':')
		}
	}
	return b.String()
}

// longestZeros is where the first longest run of zero pieces longer than
// one starts (-1 if none) and its length.
func longestZeros(pieces *[8]uint16) (best, bestLen int) {
	best, bestLen = -1, 1
	for i := 0; i < 8; {
		if pieces[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && pieces[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	return best, bestLen
}
