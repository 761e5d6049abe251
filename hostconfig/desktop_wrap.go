package hostconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// EntryName is the mcpServers entry through which the host starts mcp-guard
// for every guarded server at once.
const EntryName = "mcp-guard"

// DesktopOptions say how [DesktopConfig.Wrap] rewrites the file.
type DesktopOptions struct {
	Bin    string          // the mcp-guard binary, an absolute path
	Config string          // the mcp-guard config, an absolute path
	Guard  map[string]bool // the names of that config's [[server]]s
	// PerServer replaces each guarded entry in place by one that starts
	// `mcp-guard serve --server NAME`; otherwise they are all removed and
	// one entry, [EntryName], starts `mcp-guard serve` for all of them.
	PerServer bool
	// Scope, when set, is passed as serve --scope: every serve started for
	// this host shares one label scope (the host's name).
	Scope string
}

// DesktopSkip is an entry Wrap left as it was, and why.
type DesktopSkip struct {
	Name, Reason string
	StartsGuard  bool // the entry starts mcp-guard already
}

// DesktopRewrite is what Wrap made of a config.
type DesktopRewrite struct {
	Bytes    []byte        // the new file
	Guarded  []string      // the entries now started through mcp-guard, in file order
	Skipped  []DesktopSkip // the entries left as they were, in file order
	Replaced bool          // an existing entry named EntryName was replaced
}

// Wrap returns c rewritten so that the host starts mcp-guard instead of
// starting, or connecting to, each server o.Guard names: stdio entries and
// url entries (streamable HTTP or SSE) alike. Every other top-level key and
// entry is kept, in its order; the result is indented with 2 spaces. The
// env, cwd and headers of a guarded server do not stay in the file:
// mcp-guard's config has what the server needs.
func (c *DesktopConfig) Wrap(o DesktopOptions) *DesktopRewrite {
	rw := &DesktopRewrite{}
	var servers []desktopMember
	replacedAt := -1
	for i, m := range c.servers {
		s := c.Servers[i]
		if !o.PerServer && m.name == EntryName {
			// mcp-guard's own entry goes here, whatever the entry was.
			replacedAt = len(servers)
			servers = append(servers, desktopMember{}) // filled in below
			if desktopSkipReason(s, o) == "" {
				rw.Guarded = append(rw.Guarded, s.Name)
			}
			continue
		}
		if reason := desktopSkipReason(s, o); reason != "" {
			rw.Skipped = append(rw.Skipped, DesktopSkip{Name: s.Name, Reason: reason, StartsGuard: desktopStartsGuard(s, o.Bin)})
			servers = append(servers, m)
			continue
		}
		rw.Guarded = append(rw.Guarded, s.Name)
		if o.PerServer {
			m.value = perServerEntry(s, m.value, o)
			servers = append(servers, m)
		}
	}
	if !o.PerServer {
		entry := desktopMember{name: EntryName, rawName: quoteJSON(EntryName), value: entry(o.Bin, desktopServeArgs(o, ""))}
		if replacedAt >= 0 {
			servers[replacedAt] = entry
			old := c.servers[indexOf(c.servers, EntryName)].value
			rw.Replaced = !slices.Contains(rw.Guarded, EntryName) && !bytes.Equal(compact(old), compact(entry.value))
		} else {
			servers = append(servers, entry)
		}
	}

	top := c.top
	if len(rw.Guarded) > 0 || !o.PerServer {
		top = make([]desktopMember, 0, len(c.top)+1)
		for _, m := range c.top {
			if m.name == "mcpServers" {
				m.value = object(servers)
			}
			top = append(top, m)
		}
		if !c.hasMCP {
			top = append(top, desktopMember{name: "mcpServers", rawName: quoteJSON("mcpServers"), value: object(servers)})
		}
	}
	rw.Bytes = render(top, c.Raw)
	return rw
}

// desktopSkipReason says why s is not guarded, or "" if it is.
func desktopSkipReason(s DesktopServer, o DesktopOptions) string {
	switch {
	case s.Command != "" && s.URL != "":
		return "it has both a command and a url"
	case !s.Stdio() && !s.Remote():
		if s.Type != "" {
			return fmt.Sprintf("type %q: mcp-guard relays stdio, streamable HTTP and SSE servers", s.Type)
		}
		return "it has neither a command nor a url"
	case desktopStartsGuard(s, o.Bin):
		return "it starts mcp-guard already"
	case !o.Guard[s.Name]:
		return "no [[server]] of that name in " + o.Config
	}
	return ""
}

// desktopStartsGuard reports whether s runs mcp-guard itself.
func desktopStartsGuard(s DesktopServer, bin string) bool {
	if s.Command == bin {
		return true
	}
	base := s.Command[strings.LastIndexAny(s.Command, `/\`)+1:]
	return (base == "mcp-guard" || base == "mcp-guard.exe") && len(s.Args) > 0 && s.Args[0] == "serve"
}

func desktopServeArgs(o DesktopOptions, server string) []string {
	args := []string{"serve", "--config", o.Config}
	if server != "" {
		args = append(args, "--server", server)
	}
	if o.Scope != "" {
		args = append(args, "--scope", o.Scope)
	}
	return args
}

// entry is {"command": bin, "args": args}.
func entry(bin string, args []string) []byte {
	return object([]desktopMember{
		{rawName: quoteJSON("command"), value: quoteJSON(bin)},
		{rawName: quoteJSON("args"), value: quoteAllJSON(args)},
	})
}

// perServerEntry is a guarded entry rewritten to start mcp-guard for that
// server alone: command and args replaced where they were (a url where it
// was), what the server itself needs (env, cwd, headers; the type of a url
// entry) dropped, every other field kept.
func perServerEntry(s DesktopServer, value []byte, o DesktopOptions) []byte {
	fields, err := readObject(value, value, 0, "entry")
	if err != nil { // cannot happen: ParseDesktop read it as an object
		return entry(o.Bin, desktopServeArgs(o, s.Name))
	}
	command := desktopMember{rawName: quoteJSON("command"), value: quoteJSON(o.Bin)}
	args := desktopMember{rawName: quoteJSON("args"), value: quoteAllJSON(desktopServeArgs(o, s.Name))}
	remote := s.URL != ""
	var out []desktopMember
	for _, f := range fields {
		switch f.name {
		case "env", "cwd", "headers":
			continue
		case "command", "url": // the one that says how the server is reached is replaced; the other is null
			if (f.name == "url") == remote {
				out = append(out, command)
				if remote || indexOf(fields, "args") < 0 {
					out = append(out, args)
				}
			}
			continue
		case "type":
			if remote {
				continue
			}
		case "args":
			if remote {
				continue
			}
			f.value = args.value
		}
		out = append(out, f)
	}
	return object(out)
}

func indexOf(ms []desktopMember, name string) int {
	for i, m := range ms {
		if m.name == name {
			return i
		}
	}
	return -1
}

// Redacted returns the file with the value of every env and headers member of
// every entry replaced by "[redacted]", and the user, query and fragment of
// every url too, indented like a rewrite: what may be shown on a terminal or
// in a log.
func (c *DesktopConfig) Redacted() []byte {
	top := make([]desktopMember, 0, len(c.top))
	for _, m := range c.top {
		if m.name == "mcpServers" {
			servers := make([]desktopMember, 0, len(c.servers))
			for _, s := range c.servers {
				s.value = redactEntry(s.value)
				servers = append(servers, s)
			}
			m.value = object(servers)
		}
		top = append(top, m)
	}
	return render(top, c.Raw)
}

func redactEntry(value []byte) []byte {
	fields, err := readObject(value, value, 0, "entry")
	if err != nil {
		return quoteJSON("[redacted]")
	}
	for i, f := range fields {
		if f.name == "url" {
			var u string
			if json.Unmarshal(f.value, &u) == nil {
				fields[i].value = quoteJSON(showURL(u))
			}
			continue
		}
		if f.name != "env" && f.name != "headers" {
			continue
		}
		vars, err := readObject(f.value, f.value, 0, f.name)
		if err != nil {
			if !bytes.Equal(f.value, []byte("null")) {
				fields[i].value = quoteJSON("[redacted]")
			}
			continue
		}
		for j := range vars {
			vars[j].value = quoteJSON("[redacted]")
		}
		fields[i].value = object(vars)
	}
	return object(fields)
}

// render writes the top-level members as the new file: indented with 2
// spaces, ending in a newline if the original did.
func render(top []desktopMember, orig []byte) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, object(top), "", "  "); err != nil {
		panic("desktop: rendering produced invalid JSON: " + err.Error()) // a bug, never input
	}
	if bytes.HasSuffix(bytes.TrimRight(orig, " \t\r"), []byte("\n")) {
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// Reindented returns the file as a rewrite that changes nothing would write
// it: the same members, indented with 2 spaces.
func (c *DesktopConfig) Reindented() []byte {
	return render(c.top, c.Raw)
}

// object writes members as a JSON object, their names and values as they are.
func object(ms []desktopMember) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.rawName)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// quoteJSON encodes s as a JSON string, leaving <, > and & as they are.
func quoteJSON(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimRight(b.Bytes(), "\n")
}

func quoteAllJSON(ss []string) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(quoteJSON(s))
	}
	b.WriteByte(']')
	return b.Bytes()
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
