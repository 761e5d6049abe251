package secrets

import (
	"bytes"
	"strconv"
)

// frame is an open object or array in the JSON walk.
type frame struct {
	arr              bool
	idx              int  // array: current element
	expectKey        bool // object: the next string is a key
	keyStart, keyEnd int  // object: the current key's token, quotes included
}

// RedactJSON replaces every occurrence in the JSON text b. Each string (key
// or value) is matched on its decoded text and, only if something was
// replaced, re-encoded; a number or literal holding a secret becomes a
// string. Every other byte is copied verbatim, so when nothing is replaced
// out is b itself. Hits carry the JSON pointer and the token's offset. If b
// is not JSON (an unterminated string, a bare word), it is redacted as text.
func (r *matcher) RedactJSON(b []byte) (out []byte, hits []Hit) {
	sc := r.get()
	out, hits, ok := r.walk(b, sc, true)
	r.put(sc)
	if !ok {
		return r.RedactText(b)
	}
	if out == nil {
		out = b
	}
	return out, hits
}

// Contains reports every occurrence in b (JSON, or text when b is not JSON)
// without building output: for refusing arguments that carry a secret.
func (r *matcher) Contains(b []byte) []Hit {
	sc := r.get()
	defer r.put(sc)
	_, hits, ok := r.walk(b, sc, false)
	if ok {
		return hits
	}
	sc.spans, sc.rules, sc.kws = sc.spans[:0], 0, sc.kws[:0]
	r.scan(b, sc)
	for _, s := range sc.spans {
		hits = append(hits, r.hit(s, "", s.start))
	}
	return hits
}

// walk visits the tokens of b. out is nil unless something was replaced
// (build only); ok is false when b is not JSON as far as a token scan can
// tell (an unterminated string, a bare word); the caller then treats b as
// text.
func (r *matcher) walk(b []byte, sc *scratch, build bool) (out []byte, hits []Hit, ok bool) {
	done := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
		case '{', '[':
			sc.stack = append(sc.stack, frame{arr: c == '[', expectKey: c == '{'})
			i++
		case '}', ']':
			if len(sc.stack) > 0 {
				sc.stack = sc.stack[:len(sc.stack)-1]
			}
			i++
		case ':':
			if n := len(sc.stack); n > 0 {
				sc.stack[n-1].expectKey = false
			}
			i++
		case ',':
			if n := len(sc.stack); n > 0 {
				if f := &sc.stack[n-1]; f.arr {
					f.idx++
				} else {
					f.expectKey = true
				}
			}
			i++
		case '"':
			end, esc := stringEnd(b, i)
			if end < 0 {
				return nil, nil, false
			}
			if n := len(sc.stack); n > 0 && !sc.stack[n-1].arr && sc.stack[n-1].expectKey {
				sc.stack[n-1].keyStart, sc.stack[n-1].keyEnd = i, end
			}
			if end-i-2 >= r.minLen {
				content := b[i+1 : end-1]
				text := content
				if esc {
					sc.dec = appendUnquoted(sc.dec[:0], content)
					text = sc.dec
				}
				out, hits = r.token(b, sc, text, content, esc, i, end, &done, out, hits, build)
			}
			i = end
		default:
			j := i
			for j < len(b) && isBare(b[j]) {
				j++
			}
			if !bareOK(b[i:j]) {
				return nil, nil, false
			}
			if j-i >= r.minLen {
				out, hits = r.token(b, sc, b[i:j], b[i:j], false, i, j, &done, out, hits, build)
			}
			i = j
		}
	}
	if out != nil {
		out = append(out, b[done:]...)
	}
	return out, hits, true
}

// token scans one string's decoded text (or a bare token) spanning
// b[start:end] and, when building and something redacts, writes the output
// up to end with the token re-encoded as a JSON string.
func (r *matcher) token(b []byte, sc *scratch, text, raw []byte, esc bool, start, end int, done *int, out []byte, hits []Hit, build bool) ([]byte, []Hit) {
	sc.spans, sc.rules, sc.kws = sc.spans[:0], 0, sc.kws[:0]
	r.scan(text, sc)
	if len(sc.spans) == 0 {
		return out, hits
	}
	path := pointer(b, sc.stack)
	for _, s := range sc.spans {
		h := r.hit(s, path, start)
		if h.Encoding == Raw && esc && !bytes.Contains(raw, text[s.start:s.end]) {
			h.Encoding = JSONEscaped
		}
		hits = append(hits, h)
	}
	if !build {
		return out, hits
	}
	red, changed := r.redact(sc.txt[:0], text, sc)
	sc.txt = red
	if !changed {
		return out, hits
	}
	if out == nil {
		out = make([]byte, 0, len(b)+64)
	}
	out = append(out, b[*done:start]...)
	out = appendQuoted(out, red)
	*done = end
	return out, hits
}

// bareOK reports whether t can be a number or a literal: anything else
// means b is not JSON.
func bareOK(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	switch string(t) {
	case "true", "false", "null":
		return true
	}
	return t[0] == '-' || t[0] >= '0' && t[0] <= '9'
}

// isBare reports bytes of a number or literal (true, false, null).
func isBare(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// stringEnd returns the index after the closing quote of the string opening
// at b[i], and whether it holds escapes; -1 if it does not end. Each quote
// and backslash is looked at once, so a long string full of escapes costs
// its length, not its length times its escapes.
func stringEnd(b []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1, esc
		}
		q := j + k
		p := j // first byte not yet known to be inside an escape
		for {
			bs := bytes.IndexByte(b[p:q], '\\')
			if bs < 0 {
				break
			}
			esc = true
			p += bs + 2
			if p > q {
				break
			}
		}
		if p <= q {
			return q + 1, esc
		}
		j = q + 1 // the quote was escaped
	}
}

// appendUnquoted appends the decoded body of a JSON string.
func appendUnquoted(dst, s []byte) []byte {
	var buf [4]byte
	for i := 0; i < len(s); {
		k := bytes.IndexByte(s[i:], '\\')
		if k < 0 {
			return append(dst, s[i:]...)
		}
		dst = append(dst, s[i:i+k]...)
		i += k
		dlen, slen := jsonUnit(s, i, &buf)
		dst = append(dst, buf[:dlen]...)
		i += slen
	}
	return dst
}

// appendQuoted appends s as a JSON string, escaping only what JSON requires.
func appendQuoted(dst, s []byte) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	done := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[done:i]...)
		done = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		}
	}
	dst = append(dst, s[done:]...)
	return append(dst, '"')
}

// pointer is the RFC 6901 pointer to the current token.
func pointer(b []byte, stack []frame) string {
	var p []byte
	for _, f := range stack {
		p = append(p, '/')
		if f.arr {
			p = strconv.AppendInt(p, int64(f.idx), 10)
			continue
		}
		if f.keyEnd <= f.keyStart {
			continue
		}
		for _, c := range appendUnquoted(nil, b[f.keyStart+1:f.keyEnd-1]) {
			switch c {
			case '~':
				p = append(p, '~', '0')
			case '/':
				p = append(p, '~', '1')
			default:
				p = append(p, c)
			}
		}
	}
	return string(p)
}
