package hostconfig

import (
	"path"
	"slices"
	"strings"
)

// Format is how a config file is written.
type Format int

const (
	JSON  Format = iota // strict JSON
	JSONC               // JSON with comments and trailing commas
	TOML
)

// Host is one MCP host mcp-guard can wrap.
type Host struct {
	Name  string // as given to --host
	Title string // as shown to the user
	Doc   string // the public page that says where and how it keeps its servers
	files func(Lookup) []File
}

// Lookup is what finding a host's files depends on.
type Lookup struct {
	GOOS string
	Env  func(string) (string, bool)
	Dir  string // the working directory: project-scoped files are looked for here
}

func (l Lookup) get(name string) string {
	v, _ := l.Env(name)
	return v
}

// home is $HOME, or %USERPROFILE% on Windows.
func (l Lookup) home() string {
	if l.GOOS == "windows" {
		if v := l.get("USERPROFILE"); v != "" {
			return v
		}
	}
	return l.get("HOME")
}

// join joins elem under dir with the OS's separator.
func (l Lookup) join(dir string, elem ...string) string {
	if l.GOOS == "windows" {
		return strings.TrimRight(dir, `\/`) + `\` + strings.Join(elem, `\`)
	}
	return path.Join(append([]string{dir}, elem...)...)
}

// xdgConfig is $XDG_CONFIG_HOME if absolute, else ~/.config (Linux and other
// Unix), as Electron apps and Zed resolve it.
func (l Lookup) xdgConfig() string {
	if d := l.get("XDG_CONFIG_HOME"); strings.HasPrefix(d, "/") {
		return d
	}
	if h := l.home(); h != "" {
		return path.Join(h, ".config")
	}
	return ""
}

// File is one config file of a host, and how its servers are kept in it.
type File struct {
	Host   string
	Path   string
	Scope  string // "user" or "project"
	Format Format
	// Servers is the path of keys to the object of server entries (JSON);
	// for TOML it is the table whose sub-tables are the entries.
	Servers []string
	// Projects: the file also holds entries under
	// projects.<dir>.<Servers...> (Claude Code's ~/.claude.json).
	Projects bool
	// HostRewrites: the host writes this file itself (with settings of its
	// own), so unwrap puts back the entries wrap changed rather than the
	// whole file.
	HostRewrites bool
	// URLKeys are the members that hold a remote server's URL.
	URLKeys []string
	// StdioType: a wrapped entry says "type": "stdio" (the host requires a type).
	StdioType bool
}

// All lists the hosts, in the order they are looked for.
func All() []*Host {
	return []*Host{claudeDesktop, claudeCode, cursor, vscode, windsurf, geminiCLI, zed, codex}
}

// Find returns the host named name, or nil.
func Find(name string) *Host {
	for _, h := range All() {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Names lists the hosts' names.
func Names() []string {
	var out []string
	for _, h := range All() {
		out = append(out, h.Name)
	}
	return out
}

// Files lists where h keeps its MCP servers under l, whether or not each
// file exists; a location whose variables are unset is left out.
func (h *Host) Files(l Lookup) []File {
	var out []File
	for _, f := range h.files(l) {
		// In the home directory, a project file is the user file.
		if f.Path != "" && !slices.ContainsFunc(out, func(o File) bool { return o.Path == f.Path }) {
			f.Host = h.Name
			out = append(out, f)
		}
	}
	return out
}

// FileAt is the File of h for a path the user gave: the format and layout
// of h's file of that name, or of its first file.
func (h *Host) FileAt(l Lookup, p string) File {
	fs := h.Files(l)
	base := func(s string) string { return s[strings.LastIndexAny(s, `/\`)+1:] }
	for _, f := range fs {
		if base(f.Path) == base(p) {
			f.Path = p
			return f
		}
	}
	f := h.files(l)[0]
	f.Host, f.Path = h.Name, p
	return f
}
