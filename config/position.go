package config

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// positions maps each key of a TOML file, written as its errors name it
// (server[2].sandbox.read, rule[3].when./path, ledger.witness[1]), to the
// byte offset where it is written: a key where it is assigned, a table
// where its header is, an array element where it starts. The decoder keeps
// no positions per array element, so the file is scanned again here. It is
// only given text the decoder accepted, but never fails on any text: what it
// cannot follow it skips to the end of the line.
type positions struct {
	src string
	at  map[string]int
	// arrays counts the elements of each array of tables ([[server]]).
	arrays map[string]int
	lines  []int // byte offset where each line starts; see lineCol
}

// keySep joins the parts of an index key; TOML keys may hold '.'.
const keySep = "\x1f"

func scanPositions(src string) *positions {
	p := &positions{src: src, at: map[string]int{}, arrays: map[string]int{}}
	s := &tomlScanner{src: src, p: p}
	s.file()
	return p
}

// lineCol is the 1-based line and column (in characters) of byte offset off.
func (p *positions) lineCol(off int) (line, col int) {
	if p.lines == nil { // where each line starts, found once
		p.lines = []int{0}
		for i := 0; i < len(p.src); i++ {
			if p.src[i] == '\n' {
				p.lines = append(p.lines, i+1)
			}
		}
	}
	off = min(max(off, 0), len(p.src))
	line, _ = slices.BinarySearch(p.lines, off+1) // lines starting at or before off
	return line, 1 + utf8.RuneCountInString(p.src[p.lines[line-1]:off])
}

// find is where key, or failing that its nearest enclosing key, is written.
func (p *positions) find(key []string) (off int, ok bool) {
	for n := len(key); n > 0; n-- {
		if off, ok := p.at[strings.Join(key[:n], keySep)]; ok {
			return off, true
		}
	}
	return 0, false
}

func (p *positions) record(key []string, off int) {
	k := strings.Join(key, keySep)
	if _, seen := p.at[k]; !seen {
		p.at[k] = off
	}
}

// tomlScanner walks TOML text just far enough to see its keys.
type tomlScanner struct {
	src string
	i   int
	p   *positions
}

func (s *tomlScanner) eof() bool { return s.i >= len(s.src) }
func (s *tomlScanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.i]
}

// blank skips spaces and tabs; with lines, also line breaks and comments.
func (s *tomlScanner) blank(lines bool) {
	for !s.eof() {
		switch s.src[s.i] {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			if !lines {
				return
			}
			s.i++
		case '#':
			if !lines {
				return
			}
			s.skipLine()
		default:
			return
		}
	}
}

func (s *tomlScanner) skipLine() {
	if j := strings.IndexByte(s.src[s.i:], '\n'); j >= 0 {
		s.i += j + 1
	} else {
		s.i = len(s.src)
	}
}

func (s *tomlScanner) file() {
	var table []string
	for {
		s.blank(true)
		if s.eof() {
			return
		}
		if s.peek() == '[' {
			table = s.header() // through the end of its line
			continue
		}
		start := s.i
		if key, ok := s.key(); ok && s.peek() == '=' {
			s.i++
			s.recordDotted(table, key, start)
			s.value(append(append([]string{}, table...), key...))
		}
		s.skipLine() // a comment, or what was not understood
	}
}

// header reads [a.b] or [[a.b]] and returns the table's resolved key.
func (s *tomlScanner) header() []string {
	start := s.i
	s.i++
	array := s.peek() == '['
	if array {
		s.i++
	}
	s.blank(false)
	key, _ := s.key()
	var resolved []string
	for n, part := range key {
		resolved = append(resolved, part)
		last := n == len(key)-1
		name := strings.Join(resolved, keySep)
		switch {
		case last && array:
			s.p.arrays[name]++
			resolved[n] += "[" + strconv.Itoa(s.p.arrays[name]) + "]"
		case s.p.arrays[name] > 0:
			resolved[n] += "[" + strconv.Itoa(s.p.arrays[name]) + "]"
		}
		s.p.record(resolved, start)
	}
	s.skipLine()
	return resolved
}

// recordDotted records a.b.c = ... under table, and a and a.b with it.
func (s *tomlScanner) recordDotted(table, key []string, off int) {
	for n := range key {
		s.p.record(append(append([]string{}, table...), key[:n+1]...), off)
	}
}

// key reads a possibly dotted key, bare or quoted, and the blanks after it.
func (s *tomlScanner) key() ([]string, bool) {
	var parts []string
	for {
		s.blank(false)
		var part string
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			str, ok := s.str()
			if !ok {
				return nil, false
			}
			part = str
		case bareKeyByte(c):
			j := s.i
			for !s.eof() && bareKeyByte(s.src[s.i]) {
				s.i++
			}
			part = s.src[j:s.i]
		default:
			return nil, false
		}
		parts = append(parts, part)
		s.blank(false)
		if s.peek() != '.' {
			return parts, true
		}
		s.i++
	}
}

func bareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// str reads a basic or literal string, single or multi-line, and returns
// its text (escapes in basic strings decoded where strconv can).
func (s *tomlScanner) str() (string, bool) {
	q := s.src[s.i]
	delim := string(q)
	if strings.HasPrefix(s.src[s.i:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	start := s.i
	s.i += len(delim)
	for !s.eof() {
		switch {
		case q == '"' && s.src[s.i] == '\\':
			s.i += 2
		case strings.HasPrefix(s.src[s.i:], delim):
			s.i += len(delim)
			for len(delim) == 3 && s.peek() == q { // """a"""" ends with a quote in the text
				s.i++
			}
			raw := s.src[start:s.i]
			if q == '\'' || len(delim) == 3 {
				return strings.Trim(raw, string(q)), true
			}
			if u, err := strconv.Unquote(raw); err == nil {
				return u, true
			}
			return raw[1 : len(raw)-1], true
		case len(delim) == 1 && s.src[s.i] == '\n':
			return "", false
		default:
			s.i++
		}
	}
	s.i = min(s.i, len(s.src))
	return "", false
}

// value reads the value assigned to key, recording the keys of inline
// tables and the elements of arrays inside it.
func (s *tomlScanner) value(key []string) {
	s.blank(false)
	switch c := s.peek(); c {
	case '"', '\'':
		s.str()
	case '{':
		s.i++
		for {
			s.blank(true)
			if s.eof() {
				return
			}
			switch s.peek() {
			case '}':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			start := s.i
			sub, ok := s.key()
			if !ok || s.peek() != '=' {
				s.i = max(s.i, start+1)
				continue
			}
			s.i++
			s.recordDotted(key, sub, start)
			s.value(append(append([]string{}, key...), sub...))
		}
	case '[':
		s.i++
		for n := 1; ; {
			s.blank(true)
			if s.eof() {
				return
			}
			switch s.peek() {
			case ']':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			start := s.i
			elem := append(append([]string{}, key[:len(key)-1]...), key[len(key)-1]+"["+strconv.Itoa(n)+"]")
			s.p.record(elem, start)
			s.value(elem)
			n++
			if s.i == start {
				s.i++
			}
		}
	default:
		for !s.eof() && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.i])) {
			s.i++
		}
	}
}

// messageKey is the key an error message is about: the path before the
// first ": " of "server[2] (fs).sandbox.read: ..." or
// "rule[1].when.\"/p\": ...", as positions keys it (the server's name in
// parentheses left out). A message that does not start with a key gives
// what could be read of a dotted key (its enclosing key locates it), or nil.
func messageKey(msg string) []string {
	var key []string
	i := 0
	for i < len(msg) {
		var part string
		if msg[i] == '"' {
			q, err := strconv.QuotedPrefix(msg[i:])
			if err != nil {
				return key
			}
			part, _ = strconv.Unquote(q)
			i += len(q)
		} else {
			j := i
			for i < len(msg) && bareKeyByte(msg[i]) {
				i++
			}
			if i == j {
				return key
			}
			part = msg[j:i]
		}
		for i < len(msg) && msg[i] == '[' { // server[2], roots[1]
			k := strings.IndexByte(msg[i:], ']')
			if k < 2 || strings.Trim(msg[i+1:i+k], "0123456789") != "" {
				break
			}
			part += msg[i : i+k+1]
			i += k + 1
		}
		key = append(key, part)
		if strings.HasPrefix(msg[i:], " (") { // server[2] (fs)
			k := strings.Index(msg[i:], ").")
			if c := strings.Index(msg[i:], "):"); k < 0 || c >= 0 && c < k {
				k = c
			}
			if k < 0 {
				return key
			}
			i += k + 1
		}
		if i < len(msg) && msg[i] == ':' {
			return key
		}
		if i >= len(msg) || msg[i] != '.' {
			break
		}
		i++
	}
	if len(key) < 2 { // "no [[rule]]: ...", not a key
		return nil
	}
	return key
}
