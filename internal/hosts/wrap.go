package hosts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WrapOptions say how [Doc.Wrap] rewrites a file.
type WrapOptions struct {
	Bin    string          // the mcp-guard binary, an absolute path
	Config string          // the mcp-guard config, an absolute path
	Guard  map[string]bool // the names of that config's [[server]]s
}

// Skip is an entry Wrap left as it was, and why.
type Skip struct {
	Name, Scope, Reason string
	StartsGuard         bool
}

// Change is one entry Wrap replaced: what was there and what it wrote.
type Change struct {
	Where    []string `json:"where"`
	Name     string   `json:"name"`
	Original string   `json:"original"`
	Wrapped  string   `json:"wrapped"`
}

// Rewrite is what Wrap made of a file.
type Rewrite struct {
	Bytes   []byte
	Guarded []Entry // in file order
	Skipped []Skip
	Changes []Change
}

type edit struct {
	start, end int
	text       []byte
}

// Wrap returns d with each entry o.Guard names, stdio or remote, replaced in
// place by one that starts `mcp-guard serve --config C --server NAME`. Only
// those entries' bytes change. A wrapped entry keeps its name and the fields
// mcp-guard does not replace; what the server needs (env values, cwd,
// headers, the url) goes: mcp-guard's config has it. Env values that are
// only a reference the host expands (${input:ID}, ${env:NAME}) stay, so the
// host still hands the secret it holds to mcp-guard, which passes it on.
func (d *Doc) Wrap(o WrapOptions) *Rewrite {
	rw := &Rewrite{}
	var edits []edit
	nl := "\n"
	if bytes.Contains(d.Raw, []byte("\r\n")) {
		nl = "\r\n"
	}
	for _, e := range d.Entries {
		if reason := skipReason(e, o); reason != "" {
			rw.Skipped = append(rw.Skipped, Skip{Name: e.Name, Scope: e.Scope(), Reason: reason, StartsGuard: startsGuard(e, o.Bin)})
			continue
		}
		rw.Guarded = append(rw.Guarded, e)
		if d.File.Format == TOML {
			edits = append(edits, d.tomlEdits(e, o, nl)...)
			continue
		}
		text := d.jsonEntry(e, o, nl)
		edits = append(edits, edit{e.start, e.end, text})
		rw.Changes = append(rw.Changes, Change{Where: e.Where, Name: e.Name, Original: string(d.Raw[e.start:e.end]), Wrapped: string(text)})
	}
	rw.Bytes = splice(d.Raw, edits)
	return rw
}

func splice(raw []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var out bytes.Buffer
	at := 0
	for _, e := range edits {
		out.Write(raw[at:e.start])
		out.Write(e.text)
		at = e.end
	}
	out.Write(raw[at:])
	return out.Bytes()
}

func skipReason(e Entry, o WrapOptions) string {
	switch {
	case e.Problem != "":
		return e.Problem
	case e.Command != "" && e.URL != "":
		return "it has both a command and a url"
	case !e.Stdio() && !e.Remote():
		if e.Type != "" {
			return fmt.Sprintf("type %q: mcp-guard relays stdio, streamable HTTP and SSE servers", e.Type)
		}
		return "it has neither a command nor a url"
	case startsGuard(e, o.Bin):
		return "it starts mcp-guard already"
	case !o.Guard[e.Name]:
		return "no [[server]] of that name in " + o.Config
	}
	return ""
}

func startsGuard(e Entry, bin string) bool {
	if e.Command == "" {
		return false
	}
	if e.Command == bin {
		return true
	}
	base := e.Command[strings.LastIndexAny(e.Command, `/\`)+1:]
	return (base == "mcp-guard" || base == "mcp-guard.exe") && len(e.Args) > 0 && e.Args[0] == "serve"
}

func serveArgs(o WrapOptions, name string) []string {
	return []string{"serve", "--config", o.Config, "--server", name}
}

// jsonEntry renders the wrapped entry e, indented as the file is around it.
func (d *Doc) jsonEntry(e Entry, o WrapOptions, nl string) []byte {
	outer := lineIndent(d.Raw, e.start)
	unit := "  "
	if strings.Contains(outer, "\t") {
		unit = "\t"
	}
	if ms := e.node.members; len(ms) > 0 && bytes.Contains(d.Raw[e.start:ms[0].keyStart], []byte("\n")) {
		// the entry's own members are on lines of their own: indent as they are
		if in := lineIndent(d.Raw, ms[0].keyStart); len(in) > len(outer) && strings.HasPrefix(in, outer) {
			unit = in[len(outer):]
		}
	}
	inner := outer + unit
	command := fmt.Sprintf("%q: %s", "command", quote(o.Bin))
	args := fmt.Sprintf("%q: %s", "args", quoteAll(serveArgs(o, e.Name)))
	remote := e.Command == ""
	var fields []string
	if d.File.StdioType && e.node.get("type") == nil {
		fields = append(fields, `"type": "stdio"`)
	}
	hasArgs := e.node.get("args") != nil
	var env []string // what the wrapped entry's env holds: references only
	for _, k := range keptRefs(d.File, e) {
		env = append(env, fmt.Sprintf("%s: %s", quote(k), quote(e.Env[k])))
	}
	if ref, ok := d.File.TokenRef(e); ok {
		env = append(env, fmt.Sprintf("%s: %s", quote(TokenVar(e.Name)), quote(ref)))
	}
	envField := fmt.Sprintf("%q: {%s}", "env", strings.Join(env, ", "))
	envPlaced := e.node.get("env") == nil && len(env) == 0
	placed := false // the new command is written
	for _, m := range e.node.members {
		switch {
		case !placed && (m.name == "command" && !remote || remote && isURLKey(d.File, m.name) && m.val.kind == '"' && m.val.str == e.URL):
			placed = true
			fields = append(fields, command)
			if !hasArgs || remote {
				fields = append(fields, args)
			}
			if remote && !envPlaced && e.node.get("env") == nil {
				fields = append(fields, envField)
				envPlaced = true
			}
		case m.name == "args":
			if !remote {
				fields = append(fields, args)
			}
		case m.name == "type":
			if d.File.StdioType || e.Type == "stdio" {
				fields = append(fields, `"type": "stdio"`)
			}
		case m.name == "env":
			if len(env) > 0 {
				fields = append(fields, envField)
			}
			envPlaced = true
		case m.name == "headers" || m.name == "cwd" || m.name == "envFile" || m.name == "command" || isURLKey(d.File, m.name):
		default:
			fields = append(fields, string(d.Raw[m.keyStart:m.val.end]))
		}
	}
	return []byte("{" + nl + inner + strings.Join(fields, ","+nl+inner) + nl + outer + "}")
}

// KeptRefs lists, sorted, the env variables of e whose values are
// references the host expands, which a wrapped entry of f keeps.
func keptRefs(f File, e Entry) []string {
	if !f.RefsKept() {
		return nil
	}
	var out []string
	for k, v := range e.Env {
		if IsReference(v) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// KeptRefs lists, sorted, the env variables of e that a wrapped entry of f
// keeps as the references they are: mcp-guard must pass them on.
func (f File) KeptRefs(e Entry) []string { return keptRefs(f, e) }

// lineIndent is the whitespace that starts the line holding offset at.
func lineIndent(raw []byte, at int) string {
	lineStart := bytes.LastIndexByte(raw[:at], '\n') + 1
	i := lineStart
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t') {
		i++
	}
	return string(raw[lineStart:i])
}

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
	fmt.Fprintf(&b, "command = %s%s", tomlString(o.Bin), nl)
	b.WriteString("args = [")
	for i, a := range serveArgs(o, e.Name) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(a))
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
			b.WriteString(tomlString(k))
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
			return tomlString(k)
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
		return tomlString(x)
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

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
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

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimRight(b.String(), "\n")
}

func quoteAll(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = quote(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Redacted is the entry as it may be shown: env and header values, and the
// user, query and fragment of a url, replaced by "[redacted]".
func (d *Doc) Redacted(e Entry) string {
	var v any
	switch {
	case e.node != nil:
		v = canon(d.Raw, e.node)
	case e.tbl != nil:
		v = e.tbl.values
	}
	b, _ := json.MarshalIndent(redact(d.File, "", v), "", "  ")
	return string(b)
}

func redact(f File, key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			switch {
			case k == "env" || k == "headers" || k == "http_headers":
				if m, ok := val.(map[string]any); ok {
					r := map[string]any{}
					for mk, mv := range m {
						if s, ok := mv.(string); ok && IsReference(s) && k == "env" {
							r[mk] = s
						} else {
							r[mk] = "[redacted]"
						}
					}
					out[k] = r
				} else {
					out[k] = "[redacted]"
				}
			case isURLKey(f, k):
				if s, ok := val.(string); ok {
					out[k] = showURL(s)
				} else {
					out[k] = "[redacted]"
				}
			default:
				out[k] = redact(f, k, val)
			}
		}
		return out
	}
	return v
}

// showURL is u without what may hold a credential: user, query, fragment.
func showURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "[redacted]"
	}
	shown := (&url.URL{Scheme: p.Scheme, Host: p.Host, Path: p.Path}).String()
	if p.User != nil || p.RawQuery != "" || p.Fragment != "" || p.Opaque != "" {
		shown += "?[redacted]"
	}
	return shown
}

// canon is n as a Go value: what it means, without comments or layout.
func canon(raw []byte, n *node) any {
	switch n.kind {
	case '{':
		m := map[string]any{}
		for _, mb := range n.members {
			m[mb.name] = canon(raw, mb.val)
		}
		return m
	case '[':
		a := []any{}
		for _, e := range n.elems {
			a = append(a, canon(raw, e))
		}
		return a
	case '"':
		return n.str
	case '0':
		return json.Number(raw[n.start:n.end])
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}

// sameJSON reports whether a and b (JSONC) mean the same value.
func sameJSON(a, b []byte) bool {
	na, err1 := parseJSON(a, true)
	nb, err2 := parseJSON(b, true)
	if err1 != nil || err2 != nil {
		return false
	}
	ja, _ := json.Marshal(canon(a, na))
	jb, _ := json.Marshal(canon(b, nb))
	return bytes.Equal(ja, jb)
}

// Unwrapped is what Unwrap made of a file.
type Unwrapped struct {
	Bytes    []byte
	Restored []string // the entries put back
	Left     []string // the entries not put back, with why
}

// Unwrap puts back, in d, the original of each entry changes lists that is
// still as wrap wrote it (or, with force, whatever it is now). Every other
// byte of d stays.
func (d *Doc) Unwrap(changes []Change, force bool) *Unwrapped {
	u := &Unwrapped{}
	var edits []edit
	for _, c := range changes {
		label := strings.Join(append(append([]string(nil), c.Where...), c.Name), ".")
		i := slices.IndexFunc(d.Entries, func(e Entry) bool { return e.Name == c.Name && slices.Equal(e.Where, c.Where) })
		if i < 0 {
			u.Left = append(u.Left, label+" (it was removed since wrap)")
			continue
		}
		e := d.Entries[i]
		if !force && !sameJSON(d.Raw[e.start:e.end], []byte(c.Wrapped)) {
			u.Left = append(u.Left, label+" (it was changed since wrap; --force puts the original back anyway)")
			continue
		}
		edits = append(edits, edit{e.start, e.end, []byte(c.Original)})
		u.Restored = append(u.Restored, label)
	}
	u.Bytes = splice(d.Raw, edits)
	return u
}
