package hostconfig

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tomlEdits replaces the server's own table and removes its env and header
// sub-tables; its other sub-tables (tools.*) stay as they are.
func (d *Doc) tomlEdits(e Entry, o WrapOptions, nl string) []edit {
	te := e.tbl
	main := te.blocks[0]
	var b strings.Builder
	if i := bytes.IndexByte(d.Raw[main.start:], '\n'); i >= 0 {
		b.Write(d.Raw[main.start : main.start+i+1])
	} else {
		b.Write(d.Raw[main.start:])
		b.WriteString(nl)
	}
	fmt.Fprintf(&b, "command = %s%s", TOMLString(o.Bin), nl)
	b.WriteString("args = [")
	for i, a := range serveArgs(o, e.Name) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(TOMLString(a))
	}
	b.WriteString("]" + nl)
	pass := append([]string(nil), e.PassEnv...)
	if e.TokenEnv != "" && !slices.Contains(pass, e.TokenEnv) {
		pass = append(pass, e.TokenEnv)
	}
	if len(pass) > 0 {
		b.WriteString("env_vars = [")
		for i, k := range pass {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(TOMLString(k))
		}
		b.WriteString("]" + nl)
	}
	dropped := []string{"command", "args", "env", "cwd", "url", "bearer_token_env_var", "http_headers", "env_http_headers", "env_vars"}
	keys := make([]string, 0, len(te.values))
	for k := range te.values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(dropped, k) || hasSubBlock(te, k) {
			continue
		}
		fmt.Fprintf(&b, "%s = %s%s", tomlKey(k), tomlValue(te.values[k]), nl)
	}
	text := b.String()
	if main.end < len(d.Raw) || strings.HasSuffix(string(d.Raw[main.start:main.end]), "\n") {
		// the block ended with its newline; so does the new one
	} else {
		text = strings.TrimSuffix(text, nl)
	}
	edits := []edit{{main.start, main.end, []byte(text)}}
	for _, blk := range te.blocks[1:] {
		if len(blk.key) >= 3 && slices.Contains([]string{"env", "http_headers", "env_http_headers"}, blk.key[2]) {
			edits = append(edits, edit{blk.start, blk.end, nil})
		}
	}
	return edits
}

func hasSubBlock(te *tomlEntry, k string) bool {
	for _, b := range te.blocks[1:] {
		if len(b.key) >= 3 && b.key[2] == k {
			return true
		}
	}
	return false
}

func tomlKey(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return TOMLString(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// tomlValue writes v, as BurntSushi/toml decoded it, as an inline value.
func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return TOMLString(x)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, tomlValue(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []map[string]any:
		var parts []string
		for _, e := range x {
			parts = append(parts, tomlValue(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, tomlKey(k)+" = "+tomlValue(x[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case float64:
		f := strconv.FormatFloat(x, 'g', -1, 64)
		switch {
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		case math.IsNaN(x):
			return "nan"
		case !strings.ContainsAny(f, ".eE"):
			f += ".0"
		}
		return f
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// TOMLString is s as a TOML basic string (control characters escaped).
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
