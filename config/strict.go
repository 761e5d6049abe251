package config

import (
	"fmt"
	"reflect"
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

// unknownKeyHint says what an unknown key's table takes: the key meant, when
// one is a letter or two away (acton: action), else the keys it takes.
func unknownKeyHint(located string) string {
	parts := strings.Split(located, ".")
	t := reflect.TypeOf(Config{})
	for _, p := range parts[:len(parts)-1] {
		name, _, _ := strings.Cut(p, "[")
		f, ok := fieldByTag(t, name)
		if !ok {
			return "remove it"
		}
		t = f.Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return "remove it"
		}
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	last := parts[len(parts)-1]
	if last == "args" && t == reflect.TypeOf(ServerConfig{}) { // as Claude Desktop's config writes it
		return `the arguments go in command, after the program: command = ["program", "arg", ...]`
	}
	if len(keys) == 0 {
		return "remove it"
	}
	for _, k := range keys {
		if editDistance(k, last) <= 2 {
			return fmt.Sprintf("did you mean %s?", k)
		}
	}
	where := "the file's top level"
	if len(parts) > 1 {
		where = strings.Join(parts[:len(parts)-1], ".")
	}
	return fmt.Sprintf("%s takes %s", where, strings.Join(keys, ", "))
}

func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); name == tag {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// editDistance is the Levenshtein distance between two short keys.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
