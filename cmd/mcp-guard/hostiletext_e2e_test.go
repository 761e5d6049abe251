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
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostile is text a model, host or server chooses to rewrite the operator's
// terminal: a colour, an OSC title, a bell, C1 controls (NEL, CSI), DEL, a
// bidi override, a zero-width space and a tag character.
const hostile = "\x1b[31mRED\x1b]0;pwned\x07\u0085\u009b\x7f\u202eevil\u200b\U000E0041"

// hostileJSON is hostile as a JSON string (with its quotes).
func hostileJSON() string {
	b, _ := json.Marshal(hostile)
	return string(b)
}

// rawControl returns the first character in s that must never reach a
// terminal raw (C0 but newline, C1, DEL, bidi controls, zero-width and tag
// characters), written out here independently of package safetext.
func rawControl(s string) (rune, int, bool) {
	for i, r := range s {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7F, r >= 0x80 && r <= 0x9F,
			r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F,
			r == 0xFEFF, r == 0x061C, r >= 0xE0000 && r <= 0xE007F, r == 0xFFFD && s[i] == 0xFF:
			return r, i, true
		}
	}
	return 0, 0, false
}

// checkNoRawControl fails t when out, what command printed on one stream,
// holds a raw control character.
func checkNoRawControl(t *testing.T, what, out string) {
	t.Helper()
	if r, i, bad := rawControl(out); bad {
		t.Errorf("%s prints a raw %U at byte %d:\n%q", what, r, i, out[max(0, i-80):min(len(out), i+80)])
	}
}

// guardStreams runs mcp-guard (in process unless the env asks for the
// binary) and returns its stdout and stderr apart.
func (e *env) guardStreams(stdin string, extraEnv []string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	// watch runs until interrupted: it gets a few seconds, then SIGINT.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	if args[0] == "watch" {
		ctx, cancel = context.WithTimeout(context.Background(), 4*time.Second)
	}
	defer cancel()
	if e.inProcess() {
		var o, er lockedBuffer
		code = run(args, cli{ctx: ctx, exe: bins.guard, stdin: strings.NewReader(stdin), stdout: &o, stderr: &er, env: envFunc(append(e.cliEnv(), extraEnv...))})
		return o.String(), er.String(), code
	}
	cmd := exec.CommandContext(ctx, bins.guard, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(append(append([]string{"HOME=" + e.dir, "PATH=/usr/bin:/bin"}, coverEnv()...), e.extra...), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil && !(args[0] == "watch" && ctx.Err() != nil) {
		e.t.Fatalf("%s: %v", args[0], err)
	}
	return o.String(), er.String(), code
}

// Every command that prints host-, model- or server-chosen text prints it
// through one printer: a hostile upstream (its initialize and tools/list
// errors, tool names and descriptions, call errors, log notifications and
// stderr) and a hostile host (arguments) leave no raw control character on
// stdout or stderr of tools, check, serve, log, pin, approvals, approve,
// watch, explain and init; the text is still there, escaped.
func TestHostileText_NoRawControlReachesTheOperator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := hostileJSON()
	okScript := `{"tools":[
{"name":"echo","description":"echoes","inputSchema":{"type":"object"}},
{"name":"ask","description":"asks","inputSchema":{"type":"object"}},
{"name":"fail","description":"fails","inputSchema":{"type":"object"}},
{"name":"chatty","description":"logs","inputSchema":{"type":"object"}},
{"name":"boom","description":"crashes","inputSchema":{"type":"object"}},
{"name":"bad` + strings.Trim(h, `"`) + `","description":"hostile name","inputSchema":{"type":"object"}},
{"name":"desc","description":` + h + `,"inputSchema":{"type":"object","properties":{"x":{"description":` + h + `}}}}],
"calls":{
 "fail":{"do":"error","code":-32000,"message":` + h + `},
 "chatty":{"do":"notify","lines":[` + mustJSON(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":`+h+`,"data":`+h+`}}`) + `]},
 "boom":{"do":"crash","stderr":` + h + `}}}`
	rules := `
[[rule]]
server = "hx"
tool = "ask"
class = "write"
action = "ask"

[[rule]]
server = "hx"
tool = "fail"
class = "write"
action = "allow"

[[rule]]
server = "hx"
tool = "*"
class = "read"
action = "allow"
`
	cfg := e.config("[limits]\napproval_wait = \"60s\"\n",
		e.fake("hx", okScript),
		e.fake("badinit", `{"errorFor":{"initialize":{"code":-32603,"message":`+h+`}}}`),
		e.fake("badlist", `{"errorFor":{"tools/list":{"code":-32603,"message":`+h+`}}}`),
		rules)
	args := map[string]any{"q": hostile, hostile: "key"}

	type run struct {
		name           string
		stdout, stderr string
	}
	var runs []run
	cmd := func(name, stdin string, env []string, a ...string) (string, int) {
		start := time.Now()
		o, er, code := e.guardStreams(stdin, env, a...)
		t.Logf("%s: exit %d in %v", name, code, time.Since(start).Round(time.Millisecond))
		runs = append(runs, run{name, o, er})
		return o + er, code
	}

	out, _ := cmd("check", "", nil, "check", "--config", cfg)
	if !strings.Contains(out, "ok") {
		t.Fatalf("check:\n%s", out)
	}
	out, code := cmd("tools", "", nil, "tools", "--config", cfg)
	if code != 1 || !strings.Contains(out, "badinit") || !strings.Contains(out, "badlist") || !strings.Contains(out, "pwned") {
		t.Fatalf("tools (exit %d) does not name the failed servers and their errors:\n%s", code, out)
	}

	// serve, driven by a real host.
	hst := e.connect(cfg, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := hst.toolNames(t)
	for _, n := range []string{"hx__echo", "hx__fail", "hx__chatty"} {
		if !strings.Contains(strings.Join(names, " "), n) {
			t.Fatalf("the host does not see %s: %v", n, names)
		}
	}
	if _, err := hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__echo", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	if res, err := hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__fail", Arguments: args}); err == nil && !res.IsError {
		t.Fatalf("fail: %v", res)
	}
	hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__chatty", Arguments: args})
	hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__nosuch\u202e", Arguments: args})
	held := hst.callAsync("hx__ask", args, 60*time.Second)
	id, cutDigest := e.pendingApproval(cfg)

	cmd("approvals", "", nil, "approvals", "--config", cfg)
	out, _ = cmd("approvals show", "", nil, "approvals", "show", id, "--config", cfg)
	if !strings.Contains(out, `\u{202E}evil`) {
		t.Fatalf("approvals show does not show the arguments escaped:\n%s", out)
	}
	cmd("approvals show --full", "", nil, "approvals", "show", id, "--full", "--config", cfg)
	cmd("approve (stale)", "", nil, "approve", id, "--shown", strings.Repeat("0", 64), "--config", cfg)
	cmd("watch", "s\n", nil, "watch", "--config", cfg)
	cmd("deny", "", nil, "deny", id, "--shown", cutDigest, "--reason", hostile, "--config", cfg)
	<-held
	hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__boom", Arguments: args})
	// serve logs the crash, with the upstream's last stderr, once it has seen it.
	eventually(t, "serve to log the upstream's crash", func() bool { return strings.Contains(hst.stderr.String(), "upstream ended") })
	hst.Close()
	runs = append(runs, run{"serve (stderr)", "", hst.stderr.String()})

	out, _ = cmd("log", "", nil, "log", "--config", cfg)
	if !strings.Contains(out, "fail") {
		t.Fatalf("log:\n%s", out)
	}
	cmd("log -v", "", nil, "log", "-v", "--limit", "100", "--config", cfg)
	cmd("pin list", "", nil, "pin", "list", "--config", cfg)
	cmd("pin diff", "", nil, "pin", "diff", "hx/desc", "--config", cfg)
	cmd("pin diff (hostile name)", "", nil, "pin", "diff", "hx/bad"+hostile, "--config", cfg)
	out, _ = cmd("explain", "", nil, "explain", "hx/echo", mustJSON(t, args), "--config", cfg)
	if !strings.Contains(out, "decision") {
		t.Fatalf("explain:\n%s", out)
	}
	cmd("explain (hostile name)", "", nil, "explain", "hx/"+hostile, "{}", "--config", cfg)
	cmd("unknown command", "", nil, hostile)

	// init, from a Claude Desktop config naming hostile servers.
	desk := filepath.Join(e.dir, "claude_desktop_config.json")
	badlist, good := filepath.Join(e.dir, "badlist.script.json"), filepath.Join(e.dir, "hx.script.json")
	dj := fmt.Sprintf(`{"mcpServers":{%s:{"command":%q,"args":["--script",%q]},"lister":{"command":%q,"args":["--script",%q]},"good":{"command":%q,"args":["--script",%q]}}}`,
		h, bins.fakeup, badlist, bins.fakeup, badlist, bins.fakeup, good)
	if err := os.WriteFile(desk, []byte(dj), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = cmd("init", "", nil, "init", "--from", desk, "--config", filepath.Join(e.dir, "init.toml"))
	if !strings.Contains(out, "lister") {
		t.Fatalf("init:\n%s", out)
	}

	for _, r := range runs {
		checkNoRawControl(t, r.name+" stdout", strings.ReplaceAll(r.stdout, "\a\n── approval", "\n── approval"))
		checkNoRawControl(t, r.name+" stderr", r.stderr)
	}
	// serve's log lines escape attribute values in the printer's notation.
	if serveLog := hst.stderr.String(); !strings.Contains(serveLog, `u{001B}[31mRED`) {
		t.Fatalf("serve's log does not escape the upstream's error text:\n%s", serveLog)
	}
	// The hostile text is shown, escaped, where the operator needs it.
	all := ""
	for _, r := range runs {
		all += r.stdout + r.stderr
	}
	if n := strings.Count(all, "pwned"); n < 10 || !regexp.MustCompile(`\\u\{?0*1[Bb]\}?\[31mRED`).MatchString(all) {
		t.Fatalf("the hostile text is not shown escaped (%d times):\n%s", n, all)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
