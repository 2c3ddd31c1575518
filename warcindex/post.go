package warcindex

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxQuerySize is warcio.js's limit on a request body turned into a
// query, in UTF-16 code units.
const maxQuerySize = 4096

// postQuery turns the body of a non-GET request into the query warcio.js
// appends to the URL (postToGetUrl): form fields as they are, JSON as
// form fields, anything else base64. It returns the query before and
// after decodeURI (the line's requestBody, and what goes in the URL).
func postQuery(contentType string, body []byte) (requestBody, query string) {
	mime, _, _ := strings.Cut(contentType, ";")
	var q string
	switch mime {
	case "application/x-www-form-urlencoded":
		q = decodeUTF8(body)
	case "application/json":
		q = jsonToQuery(decodeUTF8(body))
	case "text/plain":
		// warcio.js tries JSON and falls back to base64 only when that
		// throws, which it never does: text that is no JSON gives "".
		q = jsonToQuery(decodeUTF8(body))
	case "multipart/form-data":
		q = multipartToQuery(decodeUTF8(body), contentType)
	default:
		q = "__wb_post_data=" + base64.StdEncoding.EncodeToString(body)
	}
	q = truncateUTF16(q, maxQuerySize)
	dec, err := decodeURI(q)
	if err != nil {
		dec = ""
	}
	return q, dec
}

// appendRequestQuery is warcio.js's appendRequestQuery.
func appendRequestQuery(url, query, method string) string {
	sep := "?"
	if strings.IndexByte(url, '?') > 0 {
		sep = "&"
	}
	return url + sep + "__wb_method=" + method + "&" + query
}

// decodeUTF8 is TextDecoder's decoding: bytes that are no UTF-8 become
// U+FFFD.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// truncateUTF16 keeps the first n UTF-16 code units of s (a pair cut in
// two keeps neither half).
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// formParams is URLSearchParams: names and values in order, set()
// replacing a name's first value and dropping its others.
type formParams struct{ names, values []string }

func (p *formParams) has(name string) bool {
	for _, n := range p.names {
		if n == name {
			return true
		}
	}
	return false
}

func (p *formParams) set(name, value string) {
	for i, n := range p.names {
		if n != name {
			continue
		}
		p.values[i] = value
		j := i + 1
		for k := i + 1; k < len(p.names); k++ {
			if p.names[k] != name {
				p.names[j], p.values[j] = p.names[k], p.values[k]
				j++
			}
		}
		p.names, p.values = p.names[:j], p.values[:j]
		return
	}
	p.names = append(p.names, name)
	p.values = append(p.values, value)
}

// String is the application/x-www-form-urlencoded serialization.
func (p *formParams) String() string {
	var b strings.Builder
	for i := range p.names {
		if i > 0 {
			b.WriteByte('&')
		}
		formEncode(&b, p.names[i])
		b.WriteByte('=')
		formEncode(&b, p.values[i])
	}
	return b.String()
}

func formEncode(b *strings.Builder, s string) {
	s = decodeUTF8([]byte(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('+')
		case c == '*' || c == '-' || c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
}

// jsValue is a parsed JSON value with JavaScript's object key order.
type jsValue struct {
	kind   byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' boolean, 'z' null
	str    string
	keys   []string
	fields map[string]*jsValue
	elems  []*jsValue
}

// parseJS parses JSON as JSON.parse does, the keys of an object in the
// order Object.entries gives them: array-index keys ascending, then the
// others in the order first written (a repeated key keeps its place and
// takes the last value).
func parseJS(s string) (*jsValue, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := parseJSValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

func parseJSValue(dec *json.Decoder) (*jsValue, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jsValue{kind: 'o', fields: map[string]*jsValue{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				e, err := parseJSValue(dec)
				if err != nil {
					return nil, err
				}
				if _, seen := v.fields[k]; !seen {
					v.keys = append(v.keys, k)
				}
				v.fields[k] = e
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			orderKeys(v.keys)
			return v, nil
		case '[':
			v := &jsValue{kind: 'a'}
			for dec.More() {
				e, err := parseJSValue(dec)
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		}
	case string:
		return &jsValue{kind: 's', str: t}, nil
	case json.Number:
		return &jsValue{kind: 'n', str: jsNumber(string(t))}, nil
	case bool:
		return &jsValue{kind: 'b', str: strconv.FormatBool(t)}, nil
	case nil:
		return &jsValue{kind: 'z'}, nil
	}
	return nil, errors.New("unexpected JSON token")
}

// orderKeys puts array-index keys ("0" to "4294967294", as written
// canonically) first, ascending, keeping the others in their order.
func orderKeys(keys []string) {
	var idx []uint64
	var rest []string
	for _, k := range keys {
		if n, ok := arrayIndex(k); ok {
			idx = append(idx, n)
		} else {
			rest = append(rest, k)
		}
	}
	if len(idx) == 0 {
		return
	}
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && idx[j] < idx[j-1]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	i := 0
	for _, n := range idx {
		keys[i] = strconv.FormatUint(n, 10)
		i++
	}
	copy(keys[i:], rest)
}

func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || len(k) > 1 && k[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return n, err == nil && n < math.MaxUint32
}

// jsNumber is a JSON number as JavaScript's Number.prototype.toString
// writes it.
func jsNumber(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return s
	}
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// jsonToQuery is warcio.js's jsonToQueryString: every string, number and
// boolean (and null) under its nearest key, a repeated key numbered
// "key.2_", "key.3_", ...; text that is no JSON gives "".
func jsonToQuery(s string) string {
	var p formParams
	v, err := parseJS(s)
	if err != nil {
		return ""
	}
	dupes := map[string]int{}
	getKey := func(key string) string {
		if !p.has(key) {
			return key
		}
		if _, ok := dupes[key]; !ok {
			dupes[key] = 1
		}
		dupes[key]++
		return key + "." + strconv.Itoa(dupes[key]) + "_"
	}
	var walk func(v *jsValue, key string)
	walk = func(v *jsValue, key string) {
		value := ""
		switch v.kind {
		case 'o':
			for _, k := range v.keys {
				walk(v.fields[k], k)
			}
		case 'a':
			for _, e := range v.elems {
				walk(e, key)
			}
		case 'z':
			value = "null"
		case 's', 'n', 'b':
			value = v.str
		}
		if value != "" {
			p.set(getKey(key), value)
		}
	}
	walk(v, "")
	return p.String()
}

// jsDot matches what JavaScript's "." does: anything but a line end.
const jsDot = `[^\n\r\x{2028}\x{2029}]`

var multipartField = regexp.MustCompile(`(?i)name="([^"]+)"\r\n\r\n(` + jsDot + `*)`)

// multipartToQuery is warcio.js's mfdToQueryString: the body split at
// the boundary (used as a pattern), and each part's name and the first
// line of its value.
func multipartToQuery(body, contentType string) string {
	var p formParams
	_, boundary, ok := strings.Cut(contentType, "boundary=")
	if !ok {
		boundary = "undefined"
	} else if i := strings.Index(boundary, "boundary="); i >= 0 {
		boundary = boundary[:i]
	}
	sep, err := regexp.Compile("(?i)-*" + boundary + "-*")
	if err != nil {
		return ""
	}
	for _, part := range sep.Split(body, -1) {
		m := multipartField.FindStringSubmatch(strings.TrimSpace(part))
		if m != nil {
			p.set(m[1], m[2])
		}
	}
	return p.String()
}

// decodeURI is JavaScript's decodeURI: %XX sequences of UTF-8 decoded,
// except those of the characters it reserves; a malformed one is an
// error.
func decodeURI(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b bytes.Buffer
	bad := errors.New("URI malformed")
	hexAt := func(i int) (byte, bool) {
		if i+2 >= len(s) || s[i] != '%' || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return 0, false
		}
		return byte(unhex(s[i+1])<<4 | unhex(s[i+2])), true
	}
	for i := 0; i < len(s); {
		if s[i] != '%' {
			b.WriteByte(s[i])
			i++
			continue
		}
		c, ok := hexAt(i)
		if !ok {
			return "", bad
		}
		if c < 0x80 {
			if strings.IndexByte(";/?:@&=+$,#", c) >= 0 {
				b.WriteString(s[i : i+3])
			} else {
				b.WriteByte(c)
			}
			i += 3
			continue
		}
		n := 0
		switch {
		case c&0xe0 == 0xc0:
			n = 2
		case c&0xf0 == 0xe0:
			n = 3
		case c&0xf8 == 0xf0:
			n = 4
		default:
			return "", bad
		}
		seq := []byte{c}
		for k := 1; k < n; k++ {
			d, ok := hexAt(i + 3*k)
			if !ok || d&0xc0 != 0x80 {
				return "", bad
			}
			seq = append(seq, d)
		}
		r, size := utf8.DecodeRune(seq)
		if r == utf8.RuneError || size != n || utf16.IsSurrogate(r) {
			return "", bad
		}
		b.Write(seq)
		i += 3 * n
	}
	return b.String(), nil
}
