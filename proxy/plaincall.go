package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// plainFastCall reads line, which canon.Unique accepted (one valid JSON
// value in UTF-8, no duplicate member names), when it has the plain shape a
// host sends: exactly the members jsonrpc ("2.0"), id (an integer, or a
// string with no escape), method ("tools/call") and params, which holds name
// (a string with no escape) and at most arguments and _meta. It reads that
// shape in one pass, where readFastCall makes encoding/json read the line
// five times over. It reports false for any other shape, which readFastCall
// reads instead; what it accepts, readFastCall reads the same
// (FuzzPlainFastCall holds it to that).
func plainFastCall(line []byte) (fastCall, bool) {
	s := plainScan{b: line}
	var c fastCall
	var args, meta []byte
	var jsonrpc, method, params bool
	ok := s.object(func(name []byte) bool {
		switch string(name) {
		case "jsonrpc":
			v, ok := s.plainString()
			jsonrpc = ok && string(v) == mcp.JSONRPC_VERSION
			return jsonrpc
		case "method":
			v, ok := s.plainString()
			method = ok && string(v) == string(mcp.MethodToolsCall)
			return method
		case "id":
			id, ok := s.plainID()
			c.id = bytes.Clone(id)
			return ok
		case "params":
			params = s.object(func(name []byte) bool {
				switch string(name) {
				case "name":
					v, ok := s.plainString()
					c.req.Params.Name = string(v)
					return ok
				case "arguments":
					args = s.value()
					return true
				case "_meta":
					meta = s.value()
					return true
				}
				return false
			})
			return params && c.req.Params.Name != ""
		}
		return false
	})
	if !ok || !jsonrpc || !method || !params || c.id == nil || s.rest() {
		return fastCall{}, false
	}
	c.req.Method = string(mcp.MethodToolsCall)
	if meta != nil {
		// As readFastCall: only a progress token.
		var m mcp.Meta
		if string(meta) == "null" || json.Unmarshal(meta, &m) != nil || len(m.AdditionalFields) > 0 {
			return fastCall{}, false
		}
		c.req.Params.Meta = &m
	}
	if args != nil {
		if json.Unmarshal(args, &c.req.Params.Arguments) != nil {
			return fastCall{}, false
		}
		c.req.Params.RawArguments = bytes.Clone(args)
	}
	return c, true
}

// plainScan walks JSON text that canon.Unique accepted, so it checks only
// the shape plainFastCall wants, not validity.
type plainScan struct {
	b []byte
	i int
}

func (s *plainScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes c, after any whitespace, if it comes next.
func (s *plainScan) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// rest reports whether anything but whitespace follows.
func (s *plainScan) rest() bool {
	s.space()
	return s.i < len(s.b)
}

// object reads an object with at least one member, calling member with
// each name (a string with no escape) to read its value.
func (s *plainScan) object(member func(name []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	for {
		name, ok := s.plainString()
		if !ok || !s.next(':') || !member(name) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// plainString reads a string with no escape and returns what it holds.
func (s *plainScan) plainString() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			return nil, false
		case '"':
			s.i++
			return s.b[start : s.i-1], true
		}
		s.i++
	}
	return nil, false
}

// plainID reads an id that is a string with no escape or an integer, and
// returns its text.
func (s *plainScan) plainID() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '"' {
		_, ok := s.plainString()
		return s.b[start:s.i], ok
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	// A fraction or an exponent follows the digits where the object
	// wants a comma or a brace: the line is left to readFastCall.
	return s.b[start:s.i], s.i > digits
}

// value skips one JSON value and returns its text.
func (s *plainScan) value() []byte {
	s.space()
	start, depth := s.i, 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return s.b[start:s.i] // the end of the enclosing object
			}
			depth--
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return s.b[start:s.i]
			}
		}
		s.i++
		if depth == 0 && (s.b[s.i-1] == '"' || s.b[s.i-1] == '}' || s.b[s.i-1] == ']') {
			return s.b[start:s.i]
		}
	}
	return s.b[start:s.i]
}
