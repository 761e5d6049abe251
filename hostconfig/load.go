package hostconfig

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Entry is one server entry of a host's file.
type Entry struct {
	Name    string
	Where   []string // the keys of the object that holds it, e.g. [mcpServers] or [projects /p mcpServers]
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	Headers map[string]string
	Type    string
	// TokenEnv names the variable a remote entry's bearer token is read
	// from (Codex's bearer_token_env_var).
	TokenEnv string
	// PassEnv names variables the host passes from its own environment
	// (Codex's env_vars).
	PassEnv []string
	// EnvFile is a file of variables the host loads for the server (VS
	// Code, Cursor); mcp-guard does not read it.
	EnvFile string
	Problem string // why the entry cannot be read as a server, if it cannot

	start, end int   // the bytes of the entry: its JSON value, or its TOML table(s)
	node       *node // JSON
	tbl        *tomlEntry
}

// Scope says where in the file the entry is, for messages.
func (e Entry) Scope() string {
	return strings.Join(e.Where, ".")
}

// Stdio reports whether the host starts e as a local process.
func (e Entry) Stdio() bool {
	return e.Command != "" && e.URL == "" && (e.Type == "" || e.Type == "stdio")
}

// Remote reports whether the host reaches e over HTTP.
func (e Entry) Remote() bool {
	switch e.Type {
	case "", "http", "streamable-http", "streamableHttp", "sse":
		return e.URL != "" && e.Command == ""
	}
	return false
}

// Doc is one host config file as read.
type Doc struct {
	File    File
	Raw     []byte
	Entries []Entry // in file order
	root    *node
}

// Load reads the file f names.
func Load(f File) (*Doc, error) {
	raw, err := Read(f.Path)
	if err != nil {
		return nil, err
	}
	return Parse(f, raw)
}

// Parse reads raw as the file f.
func Parse(f File, raw []byte) (*Doc, error) {
	d := &Doc{File: f, Raw: raw}
	if f.Format == TOML {
		if err := d.parseTOML(); err != nil {
			return nil, fmt.Errorf("%s: parse %s: %w", f.Host, f.Path, err)
		}
		return d, nil
	}
	root, err := parseJSON(raw, f.Format == JSONC)
	if err != nil {
		return nil, fmt.Errorf("%s: parse %s: %w", f.Host, f.Path, err)
	}
	if root.kind != '{' {
		return nil, fmt.Errorf("%s: %s: the file is not a JSON object", f.Host, f.Path)
	}
	d.root = root
	if err := d.readServers(root, nil); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", f.Host, f.Path, err)
	}
	if f.Projects {
		if ps := root.get("projects"); ps != nil && ps.kind == '{' {
			for _, m := range ps.members {
				if err := d.readServers(m.val, []string{"projects", m.name}); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", f.Host, f.Path, err)
				}
			}
		}
	}
	sort.SliceStable(d.Entries, func(i, j int) bool { return d.Entries[i].start < d.Entries[j].start })
	return d, nil
}

// readServers reads the entries under obj.<f.Servers...>.
func (d *Doc) readServers(obj *node, prefix []string) error {
	where := append(append([]string(nil), prefix...), d.File.Servers...)
	n := obj
	for _, k := range d.File.Servers {
		n = n.get(k)
		if n == nil || n.kind == 'n' {
			return nil
		}
	}
	if n.kind != '{' {
		return fmt.Errorf("%s: %s is not an object", lineCol(d.Raw, n.start), strings.Join(where, "."))
	}
	for _, m := range n.members {
		e := Entry{Name: m.name, Where: where, start: m.val.start, end: m.val.end, node: m.val}
		d.readEntry(&e)
		d.Entries = append(d.Entries, e)
	}
	return nil
}

func (d *Doc) readEntry(e *Entry) {
	n := e.node
	what := e.Scope() + "." + strconv.Quote(e.Name)
	if n.kind != '{' {
		e.Problem = what + " is not an object"
		return
	}
	bad := func(m member, want string) {
		if e.Problem == "" {
			e.Problem = fmt.Sprintf("%s: %s.%s: want %s", lineCol(d.Raw, m.val.start), what, m.name, want)
		}
	}
	for _, m := range n.members {
		v := m.val
		if v.kind == 'n' {
			continue
		}
		switch {
		case m.name == "command" && v.kind == '{' && d.File.Host == "zed":
			// Older Zed: "command": {"path", "args", "env"}.
			for _, c := range v.members {
				switch c.name {
				case "path":
					e.Command = c.val.str
				case "args":
					e.Args, _ = c.val.strings()
				case "env":
					if c.val.kind == '{' {
						e.Env, _ = c.val.stringMap()
					}
				}
			}
		case m.name == "command" || m.name == "type" || m.name == "cwd" || m.name == "envFile" || isURLKey(d.File, m.name):
			if v.kind != '"' {
				bad(m, "a string")
				continue
			}
			switch {
			case m.name == "command":
				e.Command = v.str
			case m.name == "type":
				e.Type = v.str
			case m.name == "cwd":
				e.Cwd = v.str
			case m.name == "envFile":
				e.EnvFile = v.str
			case e.URL == "":
				e.URL = v.str
			}
		case m.name == "args":
			var ok bool
			if e.Args, ok = v.strings(); !ok {
				bad(m, "an array of strings")
			}
		case m.name == "env" || m.name == "headers":
			mp, ok := v.stringMap()
			if !ok {
				bad(m, "an object of strings")
				continue
			}
			if m.name == "env" {
				e.Env = mp
			} else {
				e.Headers = mp
			}
		}
	}
	if e.Type == "stdio" && e.URL != "" && e.Command == "" {
		e.Type = ""
	}
}

func isURLKey(f File, name string) bool {
	for _, k := range f.URLKeys {
		if k == name {
			return true
		}
	}
	return false
}

// refRE matches an env value that is only a reference the host expands:
// ${input:ID} (VS Code), ${env:NAME} (Cursor, Windsurf), ${NAME} (Claude
// Code), $NAME (Gemini CLI). It holds no secret itself.
var refRE = regexp.MustCompile(`^\$(\{[A-Za-z_][A-Za-z0-9_]*(:[A-Za-z0-9_.-]+)?\}|[A-Za-z_][A-Za-z0-9_]*)$`)

// IsReference reports whether an env value is only a reference the host
// expands when it starts the server, which holds no secret itself.
func IsReference(v string) bool { return refRE.MatchString(v) }

// TokenRef returns the reference in a remote entry's "Authorization:
// Bearer <reference>" header (VS Code's ${input:ID}, Cursor's ${env:NAME},
// Claude Code's ${NAME}): the host holds the token, so a wrapped entry
// hands it to mcp-guard in the variable [TokenVar] names, and the
// [[server]]'s token_env reads it there.
func (f File) TokenRef(e Entry) (string, bool) {
	if !f.RefsKept() || !e.Remote() {
		return "", false
	}
	for k, v := range e.Headers {
		if strings.EqualFold(k, "Authorization") && strings.HasPrefix(v, "Bearer ") && IsReference(v[len("Bearer "):]) {
			return v[len("Bearer "):], true
		}
	}
	return "", false
}

// TokenVar is the variable through which a wrapped entry of server name
// hands mcp-guard the token its host holds: MCP_GUARD_TOKEN_<NAME>, the
// name upper-cased, other characters than letters and digits as _.
func TokenVar(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return "MCP_GUARD_TOKEN_" + string(b)
}

// RefsKept reports whether the wrapped entries of f keep env references: the
// host expands them and passes the values to mcp-guard, which passes them on
// (pass_env). Codex has no references.
func (f File) RefsKept() bool { return f.Format != TOML && f.Host != "claude-desktop" }

// Exists reports whether f's file is there.
func (f File) Exists() bool {
	_, err := os.Stat(f.Path)
	return err == nil
}
