package wacz

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// node is a JSON value that keeps what it was read as, so that a file
// rewritten with a few values changed keeps everything else: an object's
// keys in their order (unknown ones included), each scalar's text as
// written (a string's escapes, a number's digits).
type node struct {
	kind byte // '{' object, '[' array, 0 scalar
	raw  []byte
	keys []string // an object's keys, decoded
	// rawKeys are the keys as written (quoted, escapes kept); nil for a
	// key added since.
	rawKeys [][]byte
	vals    []*node
}

// style is how a JSON file was laid out, to write it back alike:
// JSON.stringify(v, null, 2) and Python's json.dumps(indent=2) are
// "  ", ": " and a newline after each item; compact output has no indent
// and "," and ":" (JavaScript) or ", " and ": " (Python).
type style struct {
	indent       string // "" for compact
	colon, comma string
	finalNewline bool
}

var defaultStyle = style{indent: "  ", colon: ": ", comma: ","}

// parseJSON reads a JSON document into a node tree, and its style.
func parseJSON(b []byte) (*node, style, error) {
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, style{}, err
	}
	p := &jsonParser{b: b}
	n := p.value()
	return n, detectStyle(b), nil
}

func detectStyle(b []byte) style {
	s := style{colon: ":", comma: ","}
	trimmed := bytes.TrimRight(b, " \t\r\n")
	s.finalNewline = len(trimmed) < len(b)
	body := bytes.TrimLeft(trimmed, " \t\r\n")
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		line := body[i+1:]
		j := 0
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		s.indent = string(line[:j])
		if s.indent == "" {
			s.indent = "  "
		}
	}
	// The separator after the first key.
	if i := bytes.Index(body, []byte(`":`)); i >= 0 && i+2 < len(body) && body[i+2] == ' ' {
		s.colon = ": "
	}
	if s.indent == "" && bytes.Contains(body, []byte(", ")) && s.colon == ": " {
		s.comma = ", "
	}
	return s
}

// jsonParser reads a document json.Valid accepted.
type jsonParser struct {
	b   []byte
	pos int
}

func (p *jsonParser) ws() {
	for p.pos < len(p.b) && (p.b[p.pos] == ' ' || p.b[p.pos] == '\t' || p.b[p.pos] == '\n' || p.b[p.pos] == '\r') {
		p.pos++
	}
}

func (p *jsonParser) value() *node {
	p.ws()
	switch p.b[p.pos] {
	case '{':
		n := &node{kind: '{'}
		p.pos++
		p.ws()
		if p.b[p.pos] == '}' {
			p.pos++
			return n
		}
		for {
			p.ws()
			k := p.scalar()
			var key string
			json.Unmarshal(k.raw, &key)
			p.ws()
			p.pos++ // ':'
			n.keys = append(n.keys, key)
			n.rawKeys = append(n.rawKeys, k.raw)
			n.vals = append(n.vals, p.value())
			p.ws()
			c := p.b[p.pos]
			p.pos++
			if c == '}' {
				return n
			}
		}
	case '[':
		n := &node{kind: '['}
		p.pos++
		p.ws()
		if p.b[p.pos] == ']' {
			p.pos++
			return n
		}
		for {
			n.vals = append(n.vals, p.value())
			p.ws()
			c := p.b[p.pos]
			p.pos++
			if c == ']' {
				return n
			}
		}
	}
	return p.scalar()
}

func (p *jsonParser) scalar() *node {
	start := p.pos
	if p.b[p.pos] == '"' {
		p.pos++
		for p.b[p.pos] != '"' {
			if p.b[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		p.pos++
	} else {
		for p.pos < len(p.b) && !bytes.ContainsRune([]byte(" \t\r\n,]}"), rune(p.b[p.pos])) {
			p.pos++
		}
	}
	return &node{raw: p.b[start:p.pos]}
}

// encode writes the tree in style s.
func (n *node) encode(s style) []byte {
	var b bytes.Buffer
	n.write(&b, s, "")
	if s.finalNewline {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer, s style, prefix string) {
	if n.kind == 0 {
		b.Write(n.raw)
		return
	}
	open, close := byte('{'), byte('}')
	if n.kind == '[' {
		open, close = '[', ']'
	}
	b.WriteByte(open)
	if len(n.vals) == 0 {
		b.WriteByte(close)
		return
	}
	inner := prefix + s.indent
	for i, v := range n.vals {
		if i > 0 {
			b.WriteString(s.comma)
		}
		if s.indent != "" {
			b.WriteByte('\n')
			b.WriteString(inner)
		}
		if n.kind == '{' {
			if i < len(n.rawKeys) && n.rawKeys[i] != nil {
				b.Write(n.rawKeys[i])
			} else {
				b.Write(jsonString(n.keys[i]))
			}
			b.WriteString(s.colon)
		}
		v.write(b, s, inner)
	}
	if s.indent != "" {
		b.WriteByte('\n')
		b.WriteString(prefix)
	}
	b.WriteByte(close)
}

// get returns the value of an object's key, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// set replaces the value of key, or adds it after the key after (at the
// end when after is "" or absent).
func (n *node) set(key string, v *node, after string) {
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return
		}
	}
	at := len(n.keys)
	for i, k := range n.keys {
		if k == after {
			at = i + 1
		}
	}
	for len(n.rawKeys) < len(n.keys) {
		n.rawKeys = append(n.rawKeys, nil)
	}
	n.keys = append(n.keys[:at], append([]string{key}, n.keys[at:]...)...)
	n.rawKeys = append(n.rawKeys[:at], append([][]byte{nil}, n.rawKeys[at:]...)...)
	n.vals = append(n.vals[:at], append([]*node{v}, n.vals[at:]...)...)
}

// remove deletes key from an object and reports whether it was there.
func (n *node) remove(key string) bool {
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			if i < len(n.rawKeys) {
				n.rawKeys = append(n.rawKeys[:i], n.rawKeys[i+1:]...)
			}
			n.vals = append(n.vals[:i], n.vals[i+1:]...)
			return true
		}
	}
	return false
}

// str returns a string value, decoded.
func (n *node) str() (string, bool) {
	if n == nil || n.kind != 0 || len(n.raw) == 0 || n.raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(n.raw, &s) != nil {
		return "", false
	}
	return s, true
}

// int returns an integer value (a number, or a string of digits, as
// some writers spell sizes).
func (n *node) int() (int64, bool) {
	if n == nil || n.kind != 0 {
		return 0, false
	}
	s := string(n.raw)
	if t, ok := n.str(); ok {
		s = t
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v >= 0
}

// clone copies a tree.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := &node{kind: n.kind, raw: n.raw, keys: append([]string(nil), n.keys...), rawKeys: append([][]byte(nil), n.rawKeys...)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	return c
}

// jsonString encodes s as JSON.stringify does (no HTML escaping).
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

func strNode(s string) *node { return &node{raw: jsonString(s)} }
func intNode(v int64) *node  { return &node{raw: []byte(strconv.FormatInt(v, 10))} }

// objNode builds an object of key/value pairs.
func objNode(kv ...any) *node {
	n := &node{kind: '{'}
	for i := 0; i+1 < len(kv); i += 2 {
		n.keys = append(n.keys, kv[i].(string))
		n.vals = append(n.vals, kv[i+1].(*node))
	}
	return n
}
