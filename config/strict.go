package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// locateKeys turns undecoded keys (which carry no array index) into located
// names such as rule[3].acton, by finding which array elements hold them.
func locateKeys(generic map[string]any, keys []toml.Key) []string {
	seen := map[string]bool{}
	var out []string
	distinct := map[string]bool{}
	for _, k := range keys {
		if distinct[k.String()] { // one walk per distinct key, not per occurrence
			continue
		}
		distinct[k.String()] = true
		for _, loc := range locate(generic, k, "") {
			if !seen[loc] {
				seen[loc] = true
				out = append(out, loc)
			}
		}
	}
	sort.Strings(out)
	// Drop children of a reported unknown table: "logging" covers "logging.level".
	var pruned []string
	for _, k := range out {
		covered := false
		for _, p := range pruned {
			if strings.HasPrefix(k, p+".") {
				covered = true
			}
		}
		if !covered {
			pruned = append(pruned, k)
		}
	}
	return pruned
}

func locate(v any, key toml.Key, prefix string) []string {
	if len(key) == 0 {
		return []string{prefix}
	}
	join := func(p, k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		child, ok := t[key[0]]
		if !ok {
			return nil
		}
		return locate(child, key[1:], join(prefix, key[0]))
	case []map[string]any:
		var out []string
		for i, e := range t {
			out = append(out, locate(e, key, fmt.Sprintf("%s[%d]", prefix, i+1))...)
		}
		return out
	case []any:
		var out []string
		for i, e := range t {
			out = append(out, locate(e, key, fmt.Sprintf("%s[%d]", prefix, i+1))...)
		}
		return out
	}
	return []string{join(prefix, strings.Join(key, "."))}
}

// nestingWithin reports whether no array or inline table in src nests deeper
// than max, and otherwise the line where it does. Brackets inside quoted
// strings and comments do not count; table headers ([a], [[a]]) open and
// close on one line and stay shallow.
func nestingWithin(src string, max int) (int, bool) {
	depth, line := 0, 1
	for i := 0; i < len(src); i++ {
		switch ch := src[i]; ch {
		case '\n':
			line++
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case '"', '\'':
			triple := strings.HasPrefix(src[i:], strings.Repeat(string(ch), 3))
			if triple {
				i += 3
				end := strings.Index(src[i:], strings.Repeat(string(ch), 3))
				if end < 0 {
					return line, true // the decoder reports the unterminated string
				}
				line += strings.Count(src[i:i+end], "\n")
				i += end + 2
				continue
			}
			for i++; i < len(src) && src[i] != ch && src[i] != '\n'; i++ {
				if ch == '"' && src[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > max {
				return line, false
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return 0, true
}
