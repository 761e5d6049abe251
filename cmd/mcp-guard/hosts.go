package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/hostconfig"
)

// hostFiles is the host a command acts on and its files that are there.
type hostFiles struct {
	host  *hostconfig.Host
	files []hostconfig.File // empty for claude-desktop: the Desktop rewrite (hostconfig/desktop_wrap.go) handles it
	from  string            // claude-desktop: --from, else ""
	named bool              // --host was given
}

// flag is the --host flag that names h again in a hint, or "" when the
// commands find it without one.
func (h *hostFiles) flag() string {
	if !h.named {
		return ""
	}
	return " --host " + h.host.Name
}

func hostLookup(c cli) hostconfig.Lookup {
	dir, _ := os.Getwd()
	return hostconfig.Lookup{GOOS: runtime.GOOS, Env: c.env, Dir: dir}
}

// resolveHost picks the host and files for cmd. --host names it; --from
// alone is a Claude Desktop config (as before --host). Without either, init
// and wrap look for every host's files with servers in them (unwrap: with a
// backup beside them): exactly one host found is used; several, or none,
// is a usage error that lists what was found or where it looked.
func resolveHost(cmd, name, from string, c cli, wrapped bool) (*hostFiles, error) {
	l := hostLookup(c)
	if name != "" {
		h := hostconfig.Find(name)
		if h == nil {
			return nil, usageErr("%s: --host %q: want one of %s", cmd, name, strings.Join(hostconfig.Names(), ", "))
		}
		hf := &hostFiles{host: h, named: true}
		if h.Name == "claude-desktop" {
			hf.from = from
			return hf, nil
		}
		if from != "" {
			abs, err := filepath.Abs(from)
			if err != nil {
				return nil, usageErr("%s: %v", cmd, err)
			}
			hf.files = []hostconfig.File{h.FileAt(l, abs)}
			return hf, nil
		}
		for _, f := range h.Files(l) {
			if f.Exists() && (!wrapped || exists(hostconfig.BackupPath(f.Path))) {
				hf.files = append(hf.files, f)
			}
		}
		if len(hf.files) == 0 {
			return nil, usageErr("%s: no %s config found%s; looked at:\n%s  give the file with --from", cmd, h.Title, ifStr(wrapped, " that mcp-guard wrapped"), lookedAt(h.Files(l), wrapped))
		}
		return hf, nil
	}
	if from != "" {
		return &hostFiles{host: hostconfig.Find("claude-desktop"), from: from}, nil
	}
	var found []*hostFiles
	var looked []hostconfig.File
	for _, h := range hostconfig.All() {
		hf := &hostFiles{host: h}
		for _, f := range h.Files(l) {
			looked = append(looked, f)
			if !f.Exists() {
				continue
			}
			if wrapped {
				if !exists(hostconfig.BackupPath(f.Path)) {
					continue
				}
			} else if d, err := hostconfig.Load(f); err == nil && len(d.Entries) == 0 {
				continue // a file with no servers (Claude Code's ~/.claude.json often)
			}
			hf.files = append(hf.files, f)
		}
		if len(hf.files) > 0 {
			if h.Name == "claude-desktop" {
				hf.files = nil
			}
			found = append(found, hf)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if cmd != "init" {
			// As before --host: Claude Desktop's config, and its own message.
			return &hostFiles{host: hostconfig.Find("claude-desktop")}, nil
		}
		return nil, usageErr("%s: no MCP host config with servers found; looked at:\n%s  name the host with --host (%s) and the file with --from", cmd, lookedAt(looked, false), strings.Join(hostconfig.Names(), ", "))
	}
	var b strings.Builder
	for _, hf := range found {
		fmt.Fprintf(&b, "  --host %-15s", hf.host.Name)
		var paths []string
		for _, f := range hf.host.Files(l) {
			if f.Exists() && (hf.files == nil || slices.ContainsFunc(hf.files, func(g hostconfig.File) bool { return g.Path == f.Path })) {
				paths = append(paths, f.Path)
			}
		}
		b.WriteString(strings.Join(paths, ", ") + "\n")
	}
	return nil, usageErr("%s: several MCP hosts have %s; name one with --host:\n%s", cmd, ifStr(wrapped, "configs that mcp-guard wrapped", "servers configured"), strings.TrimRight(b.String(), "\n"))
}

func ifStr(cond bool, yes string, no ...string) string {
	if cond {
		return yes
	}
	if len(no) > 0 {
		return no[0]
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func lookedAt(files []hostconfig.File, wrapped bool) string {
	var b strings.Builder
	for _, f := range files {
		state := "missing"
		switch {
		case f.Exists() && wrapped:
			state = "not wrapped"
		case f.Exists():
			state = "no servers"
		}
		fmt.Fprintf(&b, "  %-15s %s (%s)\n", f.Host, f.Path, state)
	}
	return b.String()
}

// readEntries reads the servers init imports: from the Claude Desktop
// config, or from each file of the host.
func (h *hostFiles) readEntries(c cli) (string, []hostconfig.Entry, error) {
	if h.files == nil {
		src := h.from
		if src == "" {
			p, err := hostconfig.DesktopPath(runtime.GOOS, c.env)
			if err != nil {
				return "", nil, usageErr("init: %v (name the file with --from)", err)
			}
			src = p
		}
		dcfg, err := hostconfig.LoadDesktop(src)
		if err != nil {
			return "", nil, usageErr("init: %v", err)
		}
		var out []hostconfig.Entry
		for _, s := range dcfg.Servers {
			out = append(out, hostconfig.Entry{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers, Type: s.Type})
		}
		return src, out, nil
	}
	var out []hostconfig.Entry
	var paths []string
	for _, f := range h.files {
		d, err := hostconfig.Load(f)
		if err != nil {
			return "", nil, usageErr("init: %v", err)
		}
		paths = append(paths, f.Path)
		for _, e := range d.Entries {
			if e.Problem != "" {
				fmt.Fprintf(c.stderr, "warning: server %s in %s is not guarded: %s\n", showName(e.Name), f.Path, esc(e.Problem))
				continue
			}
			if i := slices.IndexFunc(out, func(o hostconfig.Entry) bool { return o.Name == e.Name }); i >= 0 {
				fmt.Fprintf(c.stderr, "warning: server %s appears twice (%s in %s, and before); the first is imported\n", showName(e.Name), esc(e.Scope()), f.Path)
				continue
			}
			out = append(out, e)
		}
	}
	return strings.Join(paths, "\n#   "), out, nil
}

// initServers turns the host's entries into [[server]]s. Env and header
// values move into the mcp-guard config (never printed); an env value that
// is only a reference the host expands (${input:ID}, ${env:NAME}) stays in
// the host's file, and the [[server]] passes that variable on.
func initServers(entries []hostconfig.Entry, hf *hostFiles, dst string, c cli) []*initServer {
	hostFile := hostconfig.File{Host: "claude-desktop"}
	if len(hf.files) > 0 {
		hostFile = hf.files[0]
	}
	refsKept := hostFile.RefsKept()
	var servers []*initServer
	for _, s := range entries {
		switch {
		case s.Command == "" && !s.Remote():
			fmt.Fprintf(c.stderr, "warning: server %s is not guarded: it has neither a command nor a url mcp-guard can reach\n", showName(s.Name))
			continue
		case !config.ValidServerName(s.Name):
			fmt.Fprintf(c.stderr, "warning: server %s is not guarded: mcp-guard prefixes tools with the server's name, so it must be 1-32 letters, digits, '-' or '_'; rename it in the host's config and run init again\n", showName(s.Name))
			continue
		}
		if s.EnvFile != "" {
			fmt.Fprintf(c.stderr, "warning: server %s: its envFile is not read by mcp-guard; put the variables the server needs in [server.env] of %s\n", s.Name, dst)
		}
		if s.Command == "" {
			headers := map[string]string{}
			tokenEnv := s.TokenEnv
			ref, tokenRef := hostFile.TokenRef(s)
			if tokenRef {
				tokenEnv = hostconfig.TokenVar(s.Name)
				fmt.Fprintf(c.stderr, "note: server %s: its bearer token %s stays with the host, which hands it to mcp-guard as $%s (token_env); to list its tools now, set $%s and run init again\n", s.Name, esc(ref), tokenEnv, tokenEnv)
			}
			for k, v := range s.Headers {
				if tokenRef && strings.EqualFold(k, "Authorization") {
					continue
				}
				if refsKept && strings.Contains(v, "${") {
					fmt.Fprintf(c.stderr, "warning: server %s: header %s uses a variable the host expands, which mcp-guard does not; it is not imported: give [[server]] %s a token_env or headers yourself\n", s.Name, esc(k), s.Name)
					continue
				}
				headers[k] = v
			}
			s.Headers = headers
			sc := config.ServerConfig{Name: s.Name, URL: s.URL, Headers: s.Headers, TokenEnv: tokenEnv}
			if problems := config.CheckRemote(&sc, c.env); len(problems) > 0 {
				fmt.Fprintf(c.stderr, "warning: server %s is not guarded: %s\n", s.Name, strings.Join(problems, "; "))
				continue
			}
			sc.Headers = nil
			if len(s.Headers) > 0 {
				sc.Headers = s.Headers
				fmt.Fprintf(c.stderr, "warning: server %s: headers %s moved into %s (readable only by you); the values are not shown\n", s.Name, strings.Join(sortedKeys(s.Headers), ", "), dst)
			}
			servers = append(servers, &initServer{cfg: sc})
			continue
		}
		sc := config.ServerConfig{Name: s.Name, Command: append([]string{s.Command}, s.Args...), PassEnv: []string{"PATH", "HOME"}}
		if refsKept && strings.Contains(strings.Join(sc.Command, " "), "${") {
			fmt.Fprintf(c.stderr, "warning: server %s: its command uses a variable the host expands (${...}), which mcp-guard does not; edit command in [[server]] %s of %s\n", s.Name, s.Name, dst)
		}
		switch {
		case s.Cwd != "" && filepath.IsAbs(s.Cwd):
			sc.Cwd = s.Cwd
		case s.Cwd != "":
			fmt.Fprintf(c.stderr, "warning: server %s: its cwd %q is relative; set cwd in [[server]] %s of %s to where the host starts it\n", s.Name, esc(s.Cwd), s.Name, dst)
		}
		for _, k := range s.PassEnv {
			if !slices.Contains(sc.PassEnv, k) {
				sc.PassEnv = append(sc.PassEnv, k)
			}
		}
		env := map[string]string{}
		var refs []string
		for k, v := range s.Env {
			if refsKept && hostconfig.IsReference(v) {
				refs = append(refs, k)
				if !slices.Contains(sc.PassEnv, k) {
					sc.PassEnv = append(sc.PassEnv, k)
				}
				continue
			}
			env[k] = v
		}
		if len(env) > 0 {
			sc.Env = env
			fmt.Fprintf(c.stderr, "warning: server %s: env %s moved into %s (readable only by you); the values are not shown\n", s.Name, strings.Join(sortedKeys(env), ", "), dst)
		}
		if len(refs) > 0 {
			slices.Sort(refs)
			fmt.Fprintf(c.stderr, "note: server %s: env %s stays in the host's config as the reference it is (the host keeps the secret); mcp-guard passes it on (pass_env)\n", s.Name, strings.Join(refs, ", "))
		}
		servers = append(servers, &initServer{cfg: sc})
	}
	return servers
}

// entriesPath is where wrap records, beside a file the host rewrites
// itself, each entry it replaced and what it wrote there.
func entriesPath(path string) string { return path + ".mcp-guard-entries" }

func readChanges(path string) ([]hostconfig.Change, error) {
	b, err := hostconfig.Read(entriesPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []hostconfig.Change
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("read %s: %w", entriesPath(path), err)
	}
	return out, nil
}
