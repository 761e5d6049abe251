package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/hostconfig"
)

const hostTools = `{"tools":[
{"name":"read_note","description":"Reads a note.","inputSchema":{"type":"object"}},
{"name":"drop_table","description":"Drops a table.","inputSchema":{"type":"object"}},
{"name":"show_env","description":"Shows its environment.","inputSchema":{"type":"object"}}],
"calls":{"show_env":{"do":"env"}}}`

// hostCase is one host file, written as that host's docs show, holding one
// stdio server (the fake upstream) with a secret in its env and, where the
// host has them, an env value that is a reference the host expands.
type hostCase struct {
	host    string
	rel     string // under the test's directory, which is $HOME and the working directory
	content func(cmd, args string) string
	refs    bool // the entry holds REF, a reference the host expands to refSecret
	// rewrites: the host rewrites the file itself; hostEdit is an edit it
	// makes after wrap, which unwrap keeps.
	rewrites bool
}

const refSecret = "ref-secret-value"

var hostCases = []hostCase{
	{"claude-desktop", ".config/Claude/claude_desktop_config.json", func(c, a string) string {
		return "{\n\t\"globalShortcut\": \"\",\n\t\"mcpServers\": {\"notes\": {\"command\": " + c + ", \"args\": " + a + ", \"env\": {\"NOTES_TOKEN\": \"s3cret-notes\"}}}\n}\n"
	}, false, false},
	{"claude-code", ".claude.json", func(c, a string) string {
		return `{
  "numStartups": 3,
  "projects": {
    "/home/me/app": {"allowedTools": [], "mcpServers": {}}
  },
  "mcpServers": {
    "notes": {"type": "stdio", "command": ` + c + `, "args": ` + a + `, "env": {"NOTES_TOKEN": "s3cret-notes", "REF": "${MY_TOKEN}"}}
  }
}
`
	}, true, true},
	{"claude-code", ".mcp.json", func(c, a string) string {
		return `{"mcpServers": {"notes": {"command": ` + c + `, "args": ` + a + `, "env": {"NOTES_TOKEN": "s3cret-notes", "REF": "${MY_TOKEN}"}}}}`
	}, true, false},
	{"cursor", ".cursor/mcp.json", func(c, a string) string {
		return "{\n\t\"mcpServers\": {\n\t\t\"notes\": {\n\t\t\t\"command\": " + c + ",\n\t\t\t\"args\": " + a + ",\n\t\t\t\"env\": {\"NOTES_TOKEN\": \"s3cret-notes\", \"REF\": \"${env:MY_TOKEN}\"}\n\t\t}\n\t}\n}\n"
	}, true, false},
	{"vscode", ".vscode/mcp.json", func(c, a string) string {
		return `{
  // prompted once, kept by VS Code
  "inputs": [{"type": "promptString", "id": "tok", "description": "Token", "password": true}],
  "servers": {
    "notes": {
      "type": "stdio",
      "command": ` + c + `,
      "args": ` + a + `,
      "env": {"NOTES_TOKEN": "s3cret-notes", "REF": "${input:tok}"},
    },
  },
}
`
	}, true, false},
	{"vscode", ".config/Code/User/settings.json", func(c, a string) string {
		return `{
    "editor.fontSize": 14, // mine
    "mcp": {
        "servers": {
            "notes": {"type": "stdio", "command": ` + c + `, "args": ` + a + `, "env": {"NOTES_TOKEN": "s3cret-notes", "REF": "${env:MY_TOKEN}"}}
        }
    },
}
`
	}, true, true},
	{"windsurf", ".codeium/windsurf/mcp_config.json", func(c, a string) string {
		return `{"mcpServers": {"notes": {"command": ` + c + `, "args": ` + a + `, "env": {"NOTES_TOKEN": "s3cret-notes", "REF": "${env:MY_TOKEN}"}, "disabled": false}}}` + "\n"
	}, true, false},
	{"gemini-cli", ".gemini/settings.json", func(c, a string) string {
		return `{
  "theme": "GitHub",
  // servers
  "mcpServers": {
    "notes": {"command": ` + c + `, "args": ` + a + `, "env": {"NOTES_TOKEN": "s3cret-notes", "REF": "$MY_TOKEN"}, "timeout": 30000, "trust": false}
  }
}
`
	}, true, false},
	{"zed", ".config/zed/settings.json", func(c, a string) string {
		return `{
  // Zed settings
  "ui_font_size": 16,
  "context_servers": {
    "notes": {"source": "custom", "enabled": true, "command": ` + c + `, "args": ` + a + `, "env": {"NOTES_TOKEN": "s3cret-notes"}}
  },
}
`
	}, false, true},
	{"codex", ".codex/config.toml", func(c, a string) string {
		return `# Codex
model = "gpt-5-codex"

[mcp_servers.notes]
command = ` + c + `
args = ` + a + `
env_vars = ["REF"]
startup_timeout_sec = 20

[mcp_servers.notes.env]
NOTES_TOKEN = "s3cret-notes"

[profiles.fast]
model = "mini"
`
	}, true, false},
}

// Per host: init reads the host's file, wrap rewrites it, the wrapped entry
// started as the host starts it (command, args and env as written, the
// host's references expanded) is mcp-guard, whose rules govern the calls
// and whose child gets both the secret moved into mcp-guard's config and
// the one the host holds; unwrap gives back the original byte for byte, or,
// for a file the host rewrites, the original entries with the host's own
// later edit kept.
func TestHosts_InitWrapCallUnwrap(t *testing.T) {
	t.Parallel()
	binaries(t)
	for _, hc := range hostCases {
		t.Run(hc.host+"/"+strings.ReplaceAll(hc.rel, "/", "_"), func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "notes.script.json")
			record := filepath.Join(dir, "notes.record")
			if err := os.WriteFile(script, []byte(hostTools), 0o600); err != nil {
				t.Fatal(err)
			}
			q := func(s string) string { return fmt.Sprintf("%q", s) }
			args := "[" + strings.Join([]string{q("--script"), q(script), q("--record"), q(record)}, ", ") + "]"
			path := filepath.Join(dir, hc.rel)
			orig := hc.content(q(bins.fakeup), args)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
				t.Fatal(err)
			}
			run := func(want int, args ...string) string {
				t.Helper()
				return guardIn(t, dir, nil, "s3cret", want, args...)
			}

			// init, found without --host: the only host with servers here.
			out := run(0, "init")
			if !strings.Contains(out, "server notes: 3 tools, each set to ask") {
				t.Fatalf("init:\n%s", out)
			}
			cfgPath := filepath.Join(dir, ".config", "mcp-guard", "config.toml")
			cfg, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			if hc.refs && !strings.Contains(string(cfg), `"REF"`) {
				t.Fatalf("REF is not passed on:\n%s", cfg)
			}
			// Allow everything but drop_table, which is denied.
			rules := strings.ReplaceAll(string(cfg), `action = "ask"`, `action = "allow"`)
			i := strings.Index(rules, `tool = "drop_table"`)
			j := i + strings.Index(rules[i:], `action = "allow"`)
			rules = rules[:j] + `action = "deny" ` + rules[j+len(`action = "allow"`):]
			if err := os.WriteFile(cfgPath, []byte(rules), 0o600); err != nil {
				t.Fatal(err)
			}

			wrapArgs := []string{"wrap", "--host", hc.host}
			if hc.host == "claude-desktop" {
				wrapArgs = append(wrapArgs, "--per-server") // the entry keeps its name
			}
			run(0, wrapArgs...)
			wrapped, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(wrapped, []byte("s3cret")) {
				t.Fatalf("a secret stayed in the host's file:\n%s", wrapped)
			}
			if again := run(0, wrapArgs...); !strings.Contains(again, "already wrapped") {
				t.Fatalf("wrap again:\n%s", again)
			}

			// Start the entry as the host would, from the file as written.
			e := readBack(t, hc, dir, path, wrapped)
			// Every serve the host starts shares the host's label scope.
			if !strings.Contains(strings.Join(e.Args, " "), "--scope "+hc.host) {
				t.Fatalf("the wrapped entry does not name the host's label scope: %q", e.Args)
			}
			cmd := exec.Command(e.Command, e.Args...)
			cmd.Dir = dir
			cmd.Env = append([]string{"HOME=" + dir, "PATH=/usr/bin:/bin"}, coverEnv()...)
			for k, v := range e.Env {
				cmd.Env = append(cmd.Env, k+"="+expandRef(v))
			}
			for _, k := range e.PassEnv { // Codex's env_vars: from its own environment
				cmd.Env = append(cmd.Env, k+"="+refSecret)
			}
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: hc.host, Version: "1"}, nil)
			s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
			if err != nil {
				t.Fatalf("start %s %v: %v\n%s", e.Command, e.Args, err, stderr)
			}
			h := &host{ClientSession: s, stderr: stderr, cmd: cmd}
			res, err := h.call(t, "notes__read_note", map[string]any{"id": "1"})
			if err != nil || res.IsError {
				t.Fatalf("allowed call: %v %+v\n%s", err, res, stderr)
			}
			res, err = h.call(t, "notes__drop_table", map[string]any{})
			if err != nil || !res.IsError {
				t.Fatalf("denied call: %v %+v", err, res)
			}
			res, err = h.call(t, "notes__show_env", map[string]any{})
			if err != nil || res.IsError {
				t.Fatalf("show_env: %v %+v", err, res)
			}
			// The server had the secret: mcp-guard redacts exactly that
			// value (a known secret) from what the host is shown.
			envText := resultText(res)
			if !strings.Contains(envText, "NOTES_TOKEN=[redacted: notes NOTES_TOKEN]") || (hc.refs && !strings.Contains(envText, "REF="+refSecret)) {
				t.Fatalf("the server's environment:\n%s", envText)
			}
			h.Close()
			var calls []string
			rec, _ := os.ReadFile(record)
			for _, l := range strings.Split(string(rec), "\n") {
				if strings.Contains(l, `"tools/call"`) {
					calls = append(calls, l)
				}
			}
			if len(calls) != 2 || strings.Contains(strings.Join(calls, ""), "drop_table") {
				t.Fatalf("the upstream got %d calls:\n%s", len(calls), strings.Join(calls, "\n"))
			}

			want := orig
			if hc.rewrites {
				// The host rewrites its file meanwhile: a setting of its own.
				edit := func(s string) string {
					i := strings.Index(s, "\n  ")
					if k := strings.Index(s, "\n    \"editor"); k >= 0 {
						i = k
					}
					return s[:i+1] + `  "hostEdit": 1,` + s[i+1:]
				}
				if err := os.WriteFile(path, []byte(edit(string(wrapped))), 0o640); err != nil {
					t.Fatal(err)
				}
				want = edit(orig)
			}
			out = run(0, "unwrap", "--host", hc.host)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Fatalf("unwrap gave:\n%s\nwant:\n%s\n(%s)", got, want, out)
			}
			if hc.rewrites && !strings.Contains(out, "every other change made since wrap is kept") {
				t.Fatalf("unwrap did not say the host's changes are kept:\n%s", out)
			}
			for _, p := range []string{path + ".mcp-guard-backup", path + ".mcp-guard-wrapped", path + ".mcp-guard-entries"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s is left", p)
				}
			}
		})
	}
}

// readBack reads the one entry of the wrapped file: strict JSON with
// encoding/json and TOML with BurntSushi/toml, as the hosts' own parsers
// would, not with hostconfig; JSONC (which the standard library does
// not read) with internal/hosts.
func readBack(t *testing.T, hc hostCase, dir, path string, data []byte) hostconfig.Entry {
	t.Helper()
	f := hostconfig.Find(hc.host).FileAt(hostconfig.Lookup{GOOS: "linux", Env: func(k string) (string, bool) { return dir, k == "HOME" }, Dir: dir}, path)
	type entry struct {
		Command string            `json:"command" toml:"command"`
		Args    []string          `json:"args" toml:"args"`
		Env     map[string]string `json:"env" toml:"env"`
		EnvVars []string          `json:"-" toml:"env_vars"`
	}
	var servers map[string]entry
	switch f.Format {
	case hostconfig.JSON:
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(doc[f.Servers[0]], &servers); err != nil {
			t.Fatal(err)
		}
	case hostconfig.TOML:
		var doc struct {
			Servers map[string]entry `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(string(data), &doc); err != nil {
			t.Fatal(err)
		}
		servers = doc.Servers
	default:
		d, err := hostconfig.Parse(f, data)
		if err != nil || len(d.Entries) != 1 {
			t.Fatalf("%v %+v", err, d)
		}
		e := d.Entries[0]
		return e
	}
	e, ok := servers["notes"]
	if len(servers) != 1 || !ok {
		t.Fatalf("servers %+v", servers)
	}
	return hostconfig.Entry{Name: "notes", Command: e.Command, Args: e.Args, Env: e.Env, PassEnv: e.EnvVars}
}

var refPattern = regexp.MustCompile(`^\$(\{(input:|env:)?[A-Za-z_]+\}|[A-Za-z_]+)$`)

// expandRef is what the host makes of an env value: a reference becomes
// the secret the host holds.
func expandRef(v string) string {
	if refPattern.MatchString(v) {
		return refSecret
	}
	return v
}

// guardIn runs the real binary in dir, $HOME there (extra added to its
// environment), and requires exit code want and no secret in its output.
func guardIn(t *testing.T, dir string, extra []string, secret string, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(bins.guard, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{"HOME=" + dir, "PATH=/usr/bin:/bin"}, coverEnv()...), extra...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("mcp-guard %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	if bytes.Contains(out, []byte(secret)) {
		t.Fatalf("mcp-guard %s printed a secret:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// A remote server whose bearer token VS Code holds (an input): the token is
// never written anywhere by mcp-guard. The wrapped entry hands it over as
// ${input:tok} in its env, VS Code fills it in when it starts mcp-guard, and
// the [[server]]'s token_env sends it to the server.
func TestHosts_RemoteTokenStaysWithTheHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, _ := e.fakeHTTP("remote", `{"tools":[{"name":"search","description":"Searches.","inputSchema":{"type":"object"}}],"http":{"requireBearer":"tok-remote-1"}}`, 0)
	path := filepath.Join(e.dir, ".vscode", "mcp.json")
	orig := fmt.Sprintf(`{
  "inputs": [{"type": "promptString", "id": "tok", "description": "Token", "password": true}],
  "servers": {
    // a remote server
    "remote": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${input:tok}"}}
  }
}
`, base+"/mcp")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, orig)

	// init lists the tools with the token the user sets for it, and says so.
	out := guardIn(t, e.dir, []string{"MCP_GUARD_TOKEN_REMOTE=tok-remote-1"}, "tok-remote-1", 0, "init", "--host", "vscode", "--config", "g.toml")
	if !strings.Contains(out, "its bearer token ${input:tok} stays with the host, which hands it to mcp-guard as $MCP_GUARD_TOKEN_REMOTE (token_env)") || !strings.Contains(out, "server remote: 1 tool, each set to ask") {
		t.Fatalf("init:\n%s", out)
	}
	cfgPath := filepath.Join(e.dir, "g.toml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), `token_env = "MCP_GUARD_TOKEN_REMOTE"`) || strings.Contains(string(cfg), "tok-remote-1") || strings.Contains(string(cfg), "${input") {
		t.Fatalf("config:\n%s", cfg)
	}
	writeFile(t, cfgPath, strings.ReplaceAll(string(cfg), `action = "ask"`, `action = "allow"`))

	guardIn(t, e.dir, nil, "tok-remote-1", 0, "wrap", "--host", "vscode", "--config", "g.toml")
	wrapped, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	en := readBack(t, hostCase{host: "vscode"}, e.dir, path, wrapped)
	if en.Name != "remote" || en.Env["MCP_GUARD_TOKEN_REMOTE"] != "${input:tok}" || len(en.Env) != 1 || en.URL != "" {
		t.Fatalf("wrapped entry %+v:\n%s", en, wrapped)
	}
	cmd := exec.Command(en.Command, en.Args...)
	cmd.Dir = e.dir
	cmd.Env = append([]string{"HOME=" + e.dir, "PATH=/usr/bin:/bin", "MCP_GUARD_TOKEN_REMOTE=tok-remote-1"}, coverEnv()...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "vscode", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, stderr)
	}
	h := &host{ClientSession: s, stderr: stderr, cmd: cmd}
	res, err := h.call(t, "remote__search", map[string]any{"q": "x"})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v\n%s", err, res, stderr)
	}
	h.Close()
	sent := false
	for _, r := range e.httpRequests("remote") {
		if strings.Contains(r.Body, `"tools/call"`) && slices.Contains(r.Headers["Authorization"], "Bearer tok-remote-1") {
			sent = true
		}
	}
	if !sent {
		t.Fatalf("the call did not reach the server with the host's token: %+v", e.httpRequests("remote"))
	}

	guardIn(t, e.dir, nil, "tok-remote-1", 0, "unwrap", "--host", "vscode")
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Fatalf("unwrap gave:\n%s", got)
	}
}
