package hostconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// tomlBlock is one table of a TOML file: its header line through its last
// key/value line (blank and comment lines after that belong to no block).
type tomlBlock struct {
	key        []string
	start, end int
	array      bool
}

// tomlEntry is where one [mcp_servers.NAME] server is in the file.
type tomlEntry struct {
	blocks []tomlBlock // the server's own table first, then its sub-tables
	values map[string]any
}

// scanTOML finds the table headers of raw (which toml has parsed), skipping
// lines inside multi-line strings.
func scanTOML(raw []byte) ([]tomlBlock, error) {
	var blocks []tomlBlock
	inML := "" // the delimiter of the multi-line string a line starts in
	off := 0
	lastContent := 0 // end of the last line with a key/value or header
	for off < len(raw) {
		nl := bytes.IndexByte(raw[off:], '\n')
		lineEnd := len(raw)
		next := len(raw)
		if nl >= 0 {
			lineEnd, next = off+nl, off+nl+1
		}
		line := raw[off:lineEnd]
		trimmed := bytes.TrimLeft(line, " \t")
		if inML == "" && bytes.HasPrefix(trimmed, []byte("[")) {
			if len(blocks) > 0 {
				blocks[len(blocks)-1].end = lastContent
			}
			key, array, err := headerKey(trimmed)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", lineCol(raw, off), err)
			}
			blocks = append(blocks, tomlBlock{key: key, start: off, array: array})
			lastContent = next
		} else {
			content := inML != ""
			inML = scanStrings(line, inML)
			s := bytes.TrimSpace(trimmed)
			if content || (len(s) > 0 && s[0] != '#') {
				lastContent = next
			}
		}
		off = next
	}
	if len(blocks) > 0 {
		blocks[len(blocks)-1].end = lastContent
	}
	return blocks, nil
}

// scanStrings follows the strings of one line, starting inside the
// multi-line string delimited by inML ("" if none), and returns the
// multi-line string the next line starts in.
func scanStrings(line []byte, inML string) string {
	for i := 0; i < len(line); {
		if inML != "" {
			j := bytes.Index(line[i:], []byte(inML))
			if j < 0 {
				return inML
			}
			if inML == `"""` && j > 0 && line[i+j-1] == '\\' && !escapedBackslash(line[:i+j-1]) {
				i += j + 1
				continue
			}
			i += j + 3
			for i < len(line) && line[i] == inML[0] { // """" ends with a quote in the string
				i++
			}
			inML = ""
			continue
		}
		switch c := line[i]; c {
		case '#':
			return ""
		case '"', '\'':
			delim := strings.Repeat(string(c), 3)
			if bytes.HasPrefix(line[i:], []byte(delim)) {
				inML = delim
				i += 3
				continue
			}
			i++
			for i < len(line) && line[i] != c {
				if c == '"' && line[i] == '\\' {
					i++
				}
				i++
			}
			i++
		default:
			i++
		}
	}
	return inML
}

func escapedBackslash(b []byte) bool {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// headerKey reads the dotted key of a [table] or [[array]] header line.
func headerKey(line []byte) ([]string, bool, error) {
	s := string(line)
	array := strings.HasPrefix(s, "[[")
	s = s[1:]
	if array {
		s = s[1:]
	}
	var key []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, false, fmt.Errorf("a table header is not closed")
		}
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, false, fmt.Errorf("a quoted key is not closed")
			}
			var k string
			if err := json.Unmarshal([]byte(s[:end+1]), &k); err != nil {
				return nil, false, fmt.Errorf("a quoted key: %v", err)
			}
			key = append(key, k)
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, false, fmt.Errorf("a quoted key is not closed")
			}
			key = append(key, s[1:1+end])
			s = s[end+2:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
			})
			if end <= 0 {
				return nil, false, fmt.Errorf("a table header has an invalid key")
			}
			key = append(key, s[:end])
			s = s[end:]
		}
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			continue
		}
		if array && strings.HasPrefix(s, "]]") || !array && strings.HasPrefix(s, "]") {
			return key, array, nil
		}
		return nil, false, fmt.Errorf("a table header has an invalid key")
	}
}

func (d *Doc) parseTOML() error {
	var all map[string]any
	md, err := toml.Decode(string(d.Raw), &all)
	if err != nil {
		return err
	}
	_ = md
	blocks, err := scanTOML(d.Raw)
	if err != nil {
		return err
	}
	root := d.File.Servers[0]
	servers, _ := all[root].(map[string]any)
	if v, ok := all[root]; ok && servers == nil {
		return fmt.Errorf("%s is %T; want a table", root, v)
	}
	byName := map[string]*tomlEntry{}
	var order []string
	for _, b := range blocks {
		if len(b.key) < 2 || b.key[0] != root || b.array && len(b.key) == 2 {
			continue
		}
		name := b.key[1]
		te := byName[name]
		if te == nil {
			te = &tomlEntry{}
			byName[name] = te
			order = append(order, name)
		}
		if len(b.key) == 2 {
			te.blocks = slices.Insert(te.blocks, 0, b)
		} else {
			te.blocks = append(te.blocks, b)
		}
	}
	for _, name := range order {
		te := byName[name]
		vals, _ := servers[name].(map[string]any)
		te.values = vals
		e := Entry{Name: name, Where: []string{root}, tbl: te, start: te.blocks[0].start, end: te.blocks[0].end}
		if len(te.blocks[0].key) != 2 {
			e.Problem = fmt.Sprintf("[%s.%s] has no table of its own; mcp-guard edits only servers written as [%s.NAME] tables", root, name, root)
		} else {
			readTOMLEntry(&e, vals)
		}
		d.Entries = append(d.Entries, e)
	}
	for name := range servers {
		if byName[name] == nil {
			d.Entries = append(d.Entries, Entry{Name: name, Where: []string{root}, start: -1,
				Problem: fmt.Sprintf("it is not written as a [%s.%s] table (an inline table or dotted keys); mcp-guard edits only such tables", root, name)})
		}
	}
	return nil
}

func readTOMLEntry(e *Entry, v map[string]any) {
	str := func(k string) string {
		s, ok := v[k].(string)
		if _, set := v[k]; set && !ok && e.Problem == "" {
			e.Problem = fmt.Sprintf("%s.%s is not a string", e.Name, k)
		}
		return s
	}
	strs := func(k string) []string {
		a, _ := v[k].([]any)
		var out []string
		for _, x := range a {
			s, ok := x.(string)
			if !ok && e.Problem == "" {
				e.Problem = fmt.Sprintf("%s.%s is not an array of strings", e.Name, k)
			}
			out = append(out, s)
		}
		return out
	}
	smap := func(k string) map[string]string {
		m, _ := v[k].(map[string]any)
		if m == nil {
			return nil
		}
		out := map[string]string{}
		for mk, x := range m {
			s, ok := x.(string)
			if !ok && e.Problem == "" {
				e.Problem = fmt.Sprintf("%s.%s is not a table of strings", e.Name, k)
			}
			out[mk] = s
		}
		return out
	}
	e.Command = str("command")
	e.Args = strs("args")
	e.Env = smap("env")
	e.Cwd = str("cwd")
	e.URL = str("url")
	e.Headers = smap("http_headers")
	e.TokenEnv = str("bearer_token_env_var")
	e.PassEnv = strs("env_vars")
}
