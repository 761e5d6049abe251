package hostconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// node is one JSON value of a file, with where it is.
type node struct {
	kind       byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	start, end int  // the value's bytes are raw[start:end]
	str        string
	members    []member // objects, in file order
	elems      []*node  // arrays
}

// member is one member of an object.
type member struct {
	name     string
	keyStart int // offset of the name's opening quote
	val      *node
}

func (n *node) get(name string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for _, m := range n.members {
		if m.name == name {
			return m.val
		}
	}
	return nil
}

// parser reads JSON, or JSONC (comments, trailing commas) when jsonc is set.
type parser struct {
	b     []byte
	i     int
	jsonc bool
	depth int
}

// parseJSON reads raw as one JSON (or JSONC) value with nothing after it but
// whitespace and, for JSONC, comments. A member name twice in one object and
// invalid UTF-8 are refused: the host and mcp-guard could read them
// differently.
func parseJSON(raw []byte, jsonc bool) (*node, error) {
	p := &parser{b: raw, jsonc: jsonc}
	if bytes.HasPrefix(raw, []byte("\xef\xbb\xbf")) {
		p.i = 3
	}
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.i >= len(p.b) {
		return nil, fmt.Errorf("the file holds no JSON value (it is empty); want an object")
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.i < len(p.b) {
		return nil, p.errf("unexpected data after the top-level value")
	}
	return n, nil
}

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("%s: %s", lineCol(p.b, p.i), fmt.Sprintf(format, a...))
}

// ws skips whitespace and, in JSONC, comments.
func (p *parser) ws() error {
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			p.i++
		case c == '/' && p.jsonc && p.i+1 < len(p.b) && p.b[p.i+1] == '/':
			for p.i < len(p.b) && p.b[p.i] != '\n' {
				p.i++
			}
		case c == '/' && p.jsonc && p.i+1 < len(p.b) && p.b[p.i+1] == '*':
			end := bytes.Index(p.b[p.i+2:], []byte("*/"))
			if end < 0 {
				return p.errf("a /* comment is not closed")
			}
			p.i += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *parser) value() (*node, error) {
	if p.i >= len(p.b) {
		return nil, p.errf("unexpected end of file")
	}
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 200 {
		return nil, p.errf("values nested more than 200 deep")
	}
	start := p.i
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &node{kind: '"', start: start, end: p.i, str: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		for p.i < len(p.b) && bytes.IndexByte([]byte("+-0123456789.eE"), p.b[p.i]) >= 0 {
			p.i++
		}
		if !json.Valid(p.b[start:p.i]) {
			p.i = start
			return nil, p.errf("invalid number")
		}
		return &node{kind: '0', start: start, end: p.i}, nil
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
			p.i += len(lit)
			return &node{kind: lit[0], start: start, end: p.i}, nil
		}
	}
	return nil, p.errf("invalid character %q looking for a value", p.b[p.i])
}

func (p *parser) str() (string, error) {
	start := p.i
	p.i++
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '\\':
			p.i += 2
		case c == '"':
			p.i++
			raw := p.b[start:p.i]
			if !utf8.Valid(raw) {
				p.i = start
				return "", p.errf("invalid UTF-8 in a string")
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				p.i = start
				return "", p.errf("invalid string: %v", err)
			}
			return s, nil
		case c < 0x20:
			return "", p.errf("a control character in a string")
		default:
			p.i++
		}
	}
	p.i = start
	return "", p.errf("a string is not closed")
}

func (p *parser) object() (*node, error) {
	n := &node{kind: '{', start: p.i}
	p.i++
	seen := map[string]bool{}
	for {
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			if len(n.members) > 0 && !p.jsonc && p.b[lastNonWS(p.b, p.i)] == ',' {
				return nil, p.errf("a comma before }")
			}
			p.i++
			n.end = p.i
			return n, nil
		}
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errf("want a member name in quotes")
		}
		keyStart := p.i
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen[name] {
			p.i = keyStart
			return nil, p.errf("duplicate object member name %q", name)
		}
		seen[name] = true
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errf("want : after a member name")
		}
		p.i++
		if err := p.ws(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{name: name, keyStart: keyStart, val: v})
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			continue
		}
		return nil, p.errf("want , or } after an object member")
	}
}

func (p *parser) array() (*node, error) {
	n := &node{kind: '[', start: p.i}
	p.i++
	for {
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			if len(n.elems) > 0 && !p.jsonc && p.b[lastNonWS(p.b, p.i)] == ',' {
				return nil, p.errf("a comma before ]")
			}
			p.i++
			n.end = p.i
			return n, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			continue
		}
		return nil, p.errf("want , or ] after an array element")
	}
}

func lastNonWS(b []byte, i int) int {
	for i--; i > 0 && bytes.IndexByte([]byte(" \t\r\n"), b[i]) >= 0; i-- {
	}
	return i
}

// lineCol names the position of byte offset off in raw, both counted from 1;
// the column counts characters.
func lineCol(raw []byte, off int) string {
	off = max(0, min(off, len(raw)))
	before := raw[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d col %d", line, col)
}

// strings reads n as an array of strings.
func (n *node) strings() ([]string, bool) {
	if n.kind != '[' {
		return nil, false
	}
	out := make([]string, 0, len(n.elems))
	for _, e := range n.elems {
		if e.kind != '"' {
			return nil, false
		}
		out = append(out, e.str)
	}
	return out, true
}

// stringMap reads n as an object of strings.
func (n *node) stringMap() (map[string]string, bool) {
	if n.kind != '{' {
		return nil, false
	}
	out := make(map[string]string, len(n.members))
	for _, m := range n.members {
		if m.val.kind != '"' {
			return nil, false
		}
		out[m.name] = m.val.str
	}
	return out, true
}
