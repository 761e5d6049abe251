package classify

import (
	"errors"
	"strconv"
	"strings"
)

// pointer is a parsed RFC 6901 JSON pointer.
type pointer struct {
	src  string
	toks []string // unescaped reference tokens; none for ""
}

// parsePointer parses s: "" or '/'-separated tokens in which '~' is only
// allowed as "~0" ('~') or "~1" ('/').
func parsePointer(s string) (pointer, error) {
	p := pointer{src: s}
	if s == "" {
		return p, nil
	}
	if s[0] != '/' {
		return p, errors.New(`bad JSON pointer: must be "" or start with "/"`)
	}
	for tok := range strings.SplitSeq(s[1:], "/") {
		if strings.IndexByte(tok, '~') >= 0 {
			var b strings.Builder
			for i := 0; i < len(tok); i++ {
				if tok[i] != '~' {
					b.WriteByte(tok[i])
					continue
				}
				if i+1 == len(tok) || (tok[i+1] != '0' && tok[i+1] != '1') {
					return p, errors.New(`bad JSON pointer: "~" must be followed by 0 or 1`)
				}
				if tok[i+1] == '0' {
					b.WriteByte('~')
				} else {
					b.WriteByte('/')
				}
				i++
			}
			tok = b.String()
		}
		p.toks = append(p.toks, tok)
	}
	return p, nil
}

// resolve returns the value p refers to in doc. Objects must be
// map[string]any and arrays []any; anything else has no children.
func (p pointer) resolve(doc any) (any, bool) {
	v := doc
	for _, tok := range p.toks {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// arrayIndex parses an RFC 6901 array index: "0" or decimal digits without a
// leading zero. "-" (past the end) and anything else is not an index.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 18 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}

// isPrefixOf reports whether p's tokens are a proper or equal prefix of q's.
func (p pointer) isPrefixOf(q pointer) bool {
	if len(p.toks) > len(q.toks) {
		return false
	}
	for i, t := range p.toks {
		if q.toks[i] != t {
			return false
		}
	}
	return true
}
