package hostconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// WrapOptions say how [Doc.Wrap] rewrites a file.
type WrapOptions struct {
	Bin    string          // the mcp-guard binary, an absolute path
	Config string          // the mcp-guard config, an absolute path
	Guard  map[string]bool // the names of that config's [[server]]s
	// Scope, when set, is passed as serve --scope: every serve the host
	// starts shares one label scope (flows), named for the host.
	Scope string
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
	args := []string{"serve", "--config", o.Config, "--server", name}
	if o.Scope != "" {
		args = append(args, "--scope", o.Scope)
	}
	return args
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
