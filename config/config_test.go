package config

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func mapEnv(m map[string]string) EnvFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const minimal = `
[[server]]
name = "fs"
command = ["x"]
[[rule]]
server = "fs"
tool = "*"
class = "read"
action = "allow"
`

func TestConfig_DefaultsForEveryLimit(t *testing.T) {
	c, err := Parse("c.toml", minimal, mapEnv(map[string]string{"HOME": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.limits != DefaultLimits() {
		t.Fatalf("limits %+v, want the defaults %+v", c.limits, DefaultLimits())
	}
	if c.Ledger.Path != "/home/u/.local/state/mcp-guard/ledger.db" || c.Pin.Mode != "tofu" {
		t.Fatalf("defaults: ledger %q pin %q", c.Ledger.Path, c.Pin.Mode)
	}
}

func TestConfig_LimitsSetAndRefused(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	c, err := Parse("c.toml", "[limits]\ncall_timeout = \"5s\"\nmessage_bytes = 70000\n"+minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.limits.CallTimeout.Seconds() != 5 || c.limits.MessageBytes != 70000 {
		t.Fatalf("limits not applied: %+v", c.limits)
	}
	for _, bad := range []string{"calls_per_session = 0", "result_bytes = -1", "grant_ttl = \"0s\"", "approval_wait = \"-1s\"", "message_bytes = 10", "call_timeout = 5"} {
		_, err := Parse("c.toml", "[limits]\n"+bad+"\n"+minimal, env)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: accepted, want a config error", bad)
		}
	}
}

func TestConfig_ChildEnvIsExactlyEnvAndPassEnv(t *testing.T) {
	parent := mapEnv(map[string]string{"PATH": "/bin", "SECRET": "s", "HOME": "/h", "FIXED": "from-parent"})
	s := ServerConfig{Env: map[string]string{"FIXED": "config", "B": "2"}, PassEnv: []string{"PATH", "FIXED", "MISSING"}}
	got := strings.Join(s.ChildEnv(parent), " ")
	if got != "PATH=/bin B=2 FIXED=config" {
		t.Fatalf("child env %q", got)
	}
	if got := (ServerConfig{}).ChildEnv(parent); got == nil || len(got) != 0 {
		t.Fatalf("no env configured must give an empty, non-nil environment, got %#v", got)
	}
}

func TestConfig_ExpandPath(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/state"})
	for in, want := range map[string]string{
		"~/a/b.db":               "/home/u/a/b.db",
		"~":                      "/home/u",
		"$XDG_STATE_HOME/x.db":   "/state/x.db",
		"${XDG_CONFIG_HOME}/x":   "/home/u/.config/x",
		"/abs/../abs/ledger.db":  "/abs/ledger.db",
		"$HOME/.local/ledger.db": "/home/u/.local/ledger.db",
	} {
		got, err := ExpandPath(in, env)
		if err != nil || got != want {
			t.Errorf("ExpandPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"rel/x", "$SECRET/x", "~user/x"} {
		if got, err := ExpandPath(bad, env); err == nil {
			t.Errorf("ExpandPath(%q) = %q, want an error", bad, got)
		}
	}
}

// FuzzParseConfig: any input either parses into a usable config or is
// refused with an *Error; it never panics.
func FuzzParseConfig(f *testing.F) {
	f.Add(minimal)
	f.Add("[limits]\ncalls_per_session = 0\n" + minimal)
	f.Add(minimal + "[[rule]]\nserver = \"fs\"\ntool = \"w\"\nclass = \"write\"\naction = \"allow\"\nwhen = { \"/p\" = { path = \"/a/**\" } }\n")
	f.Add("[[rule]]\nacton = 1\n")
	f.Add("[[server]]\nname = \"a\"\ncommand = 1\n[[server]]\ncommand = [\"x\"]\n[server.sandbox]\nread = [\"/\"]\n")
	f.Add("a.\"b.c\" = { d = [ { e = 'x' }, [1, 2] ] }\n[[x.y]]\n[x.y.z]\nq = \"\"\"\nm\"\"\"\n")
	env := mapEnv(map[string]string{"HOME": "/h"})
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return // the TOML decoder's cost grows faster than linearly; configs are the operator's
		}
		// Locating problems never fails, whatever the text, and every
		// problem is in the file or has no place.
		for _, off := range scanPositions(src).at {
			if off < 0 || off > len(src) {
				t.Fatalf("position %d outside the %d bytes", off, len(src))
			}
		}
		messageKey(src)
		lines := strings.Count(src, "\n") + 1
		if _, err := parse("f.toml", src, env, true, ""); err != nil {
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems()) == 0 {
				t.Fatalf("serving: error is not an *Error with problems: %v", err)
			}
			for _, p := range ce.Problems() {
				if p.Msg == "" || p.Line < 0 || p.Line > lines || (p.Line == 0) != (p.Col == 0) {
					t.Fatalf("problem %+v in a file of %d lines", p, lines)
				}
			}
		}
		c, err := Parse("f.toml", src, env)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is not an *Error: %v", err)
			}
			return
		}
		if len(c.Servers) == 0 || len(c.Rules) == 0 || c.rules == nil {
			t.Fatalf("accepted a config without servers or rules")
		}
		for _, s := range c.Servers {
			// Exactly one of command and url; a command's program is named.
			if !serverNameRE.MatchString(s.Name) || strings.Contains(s.Name, "__") ||
				(len(s.Command) == 0) == (s.URL == "") || len(s.Command) > 0 && s.Command[0] == "" {
				t.Fatalf("accepted server %+v", s)
			}
		}
		if c.limits.MessageBytes < 64<<10 || c.limits.CallTimeout <= 0 || c.limits.CallsPerSession <= 0 {
			t.Fatalf("accepted limits %+v", c.limits)
		}
	})
}

// Inputs that make the TOML decoder slow are refused before it sees them.
// The work is measured in bytes allocated, not time, which a loaded machine
// stretches. Today a refusal allocates under 1 KiB; the decoder given them
// allocates 6.6 MB for the huge file and, growing with the square of the
// nesting, 20 MB for 400 nested inline tables. The 2,000 unknown keys cost
// 5.4 MB today, 489 MB when each occurrence is walked rather than each
// distinct key.
func TestConfig_RefusesDeepNestingAndHugeFilesFast(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for _, tc := range []struct{ name, src, want string }{
		{"inline tables", "x=" + strings.Repeat("{a=", 2000) + "1" + strings.Repeat("}", 2000) + "\n", "nest more than 32 levels"},
		{"arrays", "x=" + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", "nest more than 32 levels"},
		{"huge", strings.Repeat("# comment\n", 200000), "a config may be at most"},
	} {
		var err error
		used := allocated(func() { _, err = Parse("c.toml", tc.src, env) })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err=%v, want it refused (%q)", tc.name, err, tc.want)
		}
		t.Logf("%s (%d bytes): %d bytes allocated", tc.name, len(tc.src), used)
		if used > 64<<10 {
			t.Errorf("%s: refusing it allocated %d bytes, over 64 KiB", tc.name, used)
		}
	}
	// Brackets in strings and comments are not nesting.
	ok := "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n" + minimal + "[[rule]]\nserver = \"fs\"\ntool = \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*\"\nclass = \"read\"\naction = \"allow\"\n"
	if _, err := Parse("c.toml", ok, env); err != nil && strings.Contains(err.Error(), "nest") {
		t.Fatalf("brackets in a string counted as nesting: %v", err)
	}
	// Thousands of unknown keys are reported cheaply.
	var err error
	src := strings.Repeat("[[rule]]\nacton=1\n", 2000)
	used := allocated(func() { _, err = Parse("c.toml", src, env) })
	if err == nil {
		t.Fatal("2000 unknown keys accepted")
	}
	t.Logf("2000 unknown keys (%d bytes): %d bytes allocated", len(src), used)
	if used > 32<<20 {
		t.Fatalf("2000 unknown keys: %d bytes allocated, over 32 MiB", used)
	}
}

// The Claude Desktop example is a valid config whose rules allow reads and
// deny writes to the filesystem server's tools; its JSON names serve.
func TestExample_ClaudeDesktopConfig(t *testing.T) {
	c, err := Load("../examples/claude-desktop/mcp-guard.toml", mapEnv(map[string]string{"HOME": "/home/me"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.warnings) > 0 {
		t.Fatalf("warnings: %v", c.warnings)
	}
	for tool, want := range map[string]string{
		"read_text_file": "allow", "read_multiple_files": "allow", "list_directory": "allow", "search_files": "allow",
		"get_file_info": "allow", "directory_tree": "allow",
		"write_file": "deny", "edit_file": "deny", "move_file": "deny", "create_directory": "deny",
	} {
		m, ok := c.rules.Decide("fs", tool, map[string]any{})
		if !ok || string(m.Action) != want {
			t.Errorf("fs/%s: %+v, want %s", tool, m, want)
		}
	}
	b, err := os.ReadFile("../examples/claude-desktop/claude_desktop_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cd struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cd); err != nil {
		t.Fatal(err)
	}
	g, ok := cd.MCPServers["guarded"]
	if !ok || !strings.HasSuffix(g.Command, "mcp-guard") || len(g.Args) == 0 || g.Args[0] != "serve" {
		t.Fatalf("claude_desktop_config.json: %+v", cd)
	}
}

// allow_sampling and allow_elicitation take true and false (as before) or
// "allow", "ask" and "deny"; anything else is refused, located.
func TestConfig_ClientAccess(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	server := func(lines string) string {
		return strings.Replace(minimal, "command = [\"x\"]\n", "command = [\"x\"]\n"+lines+"\n", 1)
	}
	for in, want := range map[string][2]Access{
		"":                             {AccessDeny, AccessDeny},
		"allow_sampling = true":        {AccessAllow, AccessDeny},
		"allow_elicitation = true":     {AccessDeny, AccessAllow},
		"allow_sampling = false":       {AccessDeny, AccessDeny},
		"allow_sampling = \"ask\"":     {AccessAsk, AccessDeny},
		"allow_elicitation = \"ask\"":  {AccessDeny, AccessAsk},
		"allow_sampling = \"allow\"":   {AccessAllow, AccessDeny},
		"allow_elicitation = \"deny\"": {AccessDeny, AccessDeny},
	} {
		c, err := Parse("c.toml", server(in), env)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := [2]Access{c.Servers[0].AllowSampling.Access, c.Servers[0].AllowElicitation.Access}; got != want {
			t.Errorf("%s: sampling, elicitation = %v, want %v", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"allow_sampling = \"Ask\"":   `server[1] (fs).allow_sampling: "Ask": want true, false, "allow", "ask" or "deny"`,
		"allow_elicitation = 1":      `server[1] (fs).allow_elicitation: want true, false, "allow", "ask" or "deny", got an integer`,
		"allow_sampling = [\"ask\"]": `server[1] (fs).allow_sampling: want true, false, "allow", "ask" or "deny", got an array`,
		"allow_sampling = {a = 1}":   `server[1] (fs).allow_sampling: want true, false, "allow", "ask" or "deny", got a table`,
	} {
		_, err := Parse("c.toml", server(in), env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// startup_wait is a top-level duration: 5s unless set; 0, negative, not a
// duration or over 10m is refused. limits.start_timeout is a limit like the
// others (default 60s).
func TestConfig_StartupWaitAndStartTimeout(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	c, err := Parse("c.toml", minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.startupWait != 5*time.Second || c.limits.StartTimeout != 60*time.Second {
		t.Fatalf("defaults: startup_wait %s start_timeout %s, want 5s and 60s", c.startupWait, c.limits.StartTimeout)
	}
	c, err = Parse("c.toml", "startup_wait = \"750ms\"\n[limits]\nstart_timeout = \"3s\"\n"+minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.startupWait != 750*time.Millisecond || c.limits.StartTimeout != 3*time.Second {
		t.Fatalf("set: startup_wait %s start_timeout %s", c.startupWait, c.limits.StartTimeout)
	}
	for _, bad := range []string{`startup_wait = "0s"`, `startup_wait = "-1s"`, `startup_wait = 5`, `startup_wait = "soon"`, `startup_wait = "11m"`,
		"[limits]\nstart_timeout = \"0s\"", "[limits]\nstart_timeout = \"-5s\""} {
		_, err := Parse("c.toml", bad+"\n"+minimal, env)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: accepted, want a config error", bad)
			continue
		}
		key := "startup_wait"
		if strings.HasPrefix(bad, "[limits]") {
			key = "limits.start_timeout"
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error does not name %s: %v", bad, key, err)
		}
	}
}

// limits.retry_wait, retry_wait_max and relist_interval pace what a
// failing server can drive: 1s, 1m and 1s unless set; each error names its
// key.
func TestConfig_RetryWaits(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	c, err := Parse("c.toml", minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.limits; l.RetryWait != time.Second || l.RetryWaitMax != time.Minute || l.RelistInterval != time.Second {
		t.Fatalf("defaults: retry_wait %s retry_wait_max %s relist_interval %s, want 1s, 1m, 1s", l.RetryWait, l.RetryWaitMax, l.RelistInterval)
	}
	c, err = Parse("c.toml", "[limits]\nretry_wait = \"250ms\"\nretry_wait_max = \"4s\"\nrelist_interval = \"2s\"\n"+minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.limits; l.RetryWait != 250*time.Millisecond || l.RetryWaitMax != 4*time.Second || l.RelistInterval != 2*time.Second {
		t.Fatalf("set: retry_wait %s retry_wait_max %s relist_interval %s", l.RetryWait, l.RetryWaitMax, l.RelistInterval)
	}
	for bad, key := range map[string]string{
		`retry_wait = "0s"`:                             "limits.retry_wait",
		`retry_wait = "1ms"`:                            "limits.retry_wait",
		`retry_wait = "2h"`:                             "limits.retry_wait",
		`relist_interval = "-1s"`:                       "limits.relist_interval",
		`relist_interval = "5ms"`:                       "limits.relist_interval",
		`retry_wait_max = "soon"`:                       "limits.retry_wait_max",
		"retry_wait = \"10s\"\nretry_wait_max = \"5s\"": "limits.retry_wait_max",
	} {
		_, err := Parse("c.toml", "[limits]\n"+bad+"\n"+minimal, env)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: accepted, want a config error", bad)
			continue
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error does not name %s: %v", bad, key, err)
		}
	}
}

// An XDG variable set to a relative path is ignored (the XDG spec), so the
// config and ledger are where the README says: ~/.config, ~/.local/state.
func TestXDGDir_RelativeIgnored(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "rel/cfg", "XDG_STATE_HOME": "/abs/state"})
	for name, want := range map[string]string{"XDG_CONFIG_HOME": "/home/u/.config", "XDG_STATE_HOME": "/abs/state"} {
		if got, err := XDGDir(name, env); err != nil || got != want {
			t.Errorf("XDGDir(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
}

// DefaultLimits sets every limit; a Limits with any one unset is refused
// by Check (proxy and upstream use it), naming the limit.
func TestLimits_CheckRefusesAnUnsetLimit(t *testing.T) {
	if err := DefaultLimits().Check(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for name, unset := range map[string]func(*Limits){
		"calls_per_session": func(l *Limits) { l.CallsPerSession = 0 },
		"pending_approvals": func(l *Limits) { l.PendingApprovals = 0 },
		"call_timeout":      func(l *Limits) { l.CallTimeout = 0 },
		"relist_interval":   func(l *Limits) { l.RelistInterval = -1 },
		"stderr bytes":      func(l *Limits) { l.StderrBytes = 0 },
	} {
		l := DefaultLimits()
		unset(&l)
		if err := l.Check(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s unset: %v", name, err)
		}
	}
	if err := (Limits{}).Check(); err == nil {
		t.Error("a zero Limits passed")
	}
}

// trust_new_tools only in tofu mode: manual mode holds everything, so the
// key would mislead. The error names the server and the key.
func TestConfig_TrustNewToolsNeedsTOFU(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	server := "[[server]]\nname = \"notes\"\ncommand = [\"x\"]\ntrust_new_tools = true\n\n[[rule]]\nserver = \"notes\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"
	if _, err := Parse("c.toml", server, env); err != nil {
		t.Fatalf("trust_new_tools in tofu mode: %v", err)
	}
	_, err := Parse("c.toml", "[pin]\nmode = \"manual\"\n\n"+server, env)
	if err == nil || !strings.Contains(err.Error(), "server[1] (notes).trust_new_tools") {
		t.Fatalf("trust_new_tools in manual mode: %v; want a config error naming it", err)
	}
}
