package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const threeTools = `{"tools":[
{"name":"read_note","description":"Reads a note.","inputSchema":{"type":"object","properties":{"id":{"type":"string"}}}},
{"name":"drop_table","description":"Drops a table.","inputSchema":{"type":"object"}},
{"name":"unclassified","description":"No rule names me.","inputSchema":{"type":"object"}}],
"calls":{"drop_table":{"do":"echo"}}}`

const threeRules = `
[[rule]]
server = "notes"
tool = "read_note"
class = "read"
action = "allow"

[[rule]]
server = "notes"
tool = "drop_table"
class = "destructive"
action = "deny"
reason = "tables are never dropped from a chat"
`

// The host sees only tools a rule classifies, each under <server>__<tool>.
func TestServe_ExposesOnlyClassifiedToolsNamespaced(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) {
			e := newEnv(t)
			h := e.connect(e.config(e.fake("notes", threeTools), threeRules), version)
			got := h.toolNames(t)
			slices.Sort(got)
			want := []string{"notes__drop_table", "notes__read_note"}
			if !slices.Equal(got, want) {
				t.Fatalf("host sees %v, want %v", got, want)
			}
		})
	}
}

// An allowed call reaches the upstream with the host's argument bytes.
func TestServe_AllowedCallForwardsArgumentBytes(t *testing.T) {
	e := newEnv(t)
	h := e.connect(e.config(e.fake("notes", threeTools), threeRules), "2025-11-25")
	args := json.RawMessage(`{"zeta":"z<>&","id":"n-1","big":9007199254740992,"f":1.50}`)
	res, err := h.call(t, "notes__read_note", args)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("allowed call returned an error result: %s", resultText(res))
	}
	calls := e.calls("notes")
	if len(calls) != 1 {
		t.Fatalf("upstream got %d tools/call, want 1", len(calls))
	}
	if !strings.Contains(calls[0].line, `"arguments":{"zeta":"z<>&","id":"n-1","big":9007199254740992,"f":1.50}`) {
		t.Fatalf("upstream got %s; want the host's argument bytes unchanged", calls[0].line)
	}
	var p struct{ Name string }
	json.Unmarshal(calls[0].Params, &p)
	if p.Name != "read_note" {
		t.Fatalf("upstream got tool name %q, want the upstream's own name read_note", p.Name)
	}
	if !strings.Contains(resultText(res), `9007199254740992,"f":1.50`) {
		t.Fatalf("result did not come back intact: %s", resultText(res))
	}
}

// A stdio upstream gets exactly its env plus the pass_env names: a secret in
// mcp-guard's own environment does not reach it.
func TestServe_ChildEnvironmentIsOnlyWhatTheConfigNames(t *testing.T) {
	e := newEnv(t)
	e.extra = []string{"PASS_ME=passed", "NOT_ME=leaked"}
	server := e.fake("envy", `{"tools":[{"name":"env","inputSchema":{"type":"object"}}],"calls":{"env":{"do":"env"}}}`,
		`env = { FIXED = "fixed-value" }`, `pass_env = ["PASS_ME", "UNSET_VAR"]`)
	h := e.connect(e.config(server, "[[rule]]\nserver = \"envy\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	res, err := h.call(t, "envy__env", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(resultText(res)), "\n")
	want := []string{"FIXED=fixed-value", "PASS_ME=passed"}
	if !slices.Equal(got, want) {
		t.Fatalf("child environment is %q, want exactly %q", got, want)
	}
}

// An upstream that crashes mid-call fails that call at once with a clear
// error; the other upstream keeps serving. (restart_e2e_test.go follows the
// crashed one as it is started again.)
func TestServe_CrashedUpstreamFailsItsCallsOthersKeepServing(t *testing.T) {
	e := newEnv(t)
	crashy := e.fake("crashy", `{"tools":[{"name":"boom","inputSchema":{"type":"object"}}],"calls":{"boom":{"do":"crash","stderr":"goodbye"}}}`)
	steady := e.fake("steady", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	h := e.connect(e.config(crashy, steady, "[[rule]]\nserver = \"*\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")

	// At once, not at a deadline: the error says the upstream exited. A call
	// left waiting on the dead upstream would end only at h.call's deadline
	// (a hang detector), with another error.
	_, err := h.call(t, "crashy__boom", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), `upstream "crashy" exited`) {
		t.Fatalf("call to crashing upstream: err=%v; want it to say the upstream exited", err)
	}
	// Its tools are withdrawn while it is down: the call is refused as a
	// name not shown (-32602) or, when the host's request raced the
	// withdrawal, by the handler's withdrawn check (an isError result).
	if res, err := h.call(t, "crashy__boom", map[string]any{}); err == nil && (!res.IsError || !strings.Contains(resultText(res), "withdrawn")) {
		t.Fatalf("second call to the crashed upstream succeeded: %v", resultText(res))
	}
	res, err := h.call(t, "steady__echo", map[string]any{"still": "here"})
	if err != nil || res.IsError {
		t.Fatalf("the other upstream stopped serving: %v %v", err, res)
	}
	logged, _ := os.ReadFile(filepath.Join(e.state, "logs", "crashy.stderr.log"))
	if !strings.Contains(string(logged), "goodbye") {
		t.Fatalf("crashed upstream's stderr not in its log: %q", logged)
	}
}

// An upstream that writes a line over limits.message_bytes is stopped; the
// proxy and the other upstreams keep running.
func TestServe_OversizedUpstreamLineDropsOnlyThatUpstream(t *testing.T) {
	e := newEnv(t)
	script := filepath.Join(e.dir, "big.json")
	os.WriteFile(script, []byte(`{"tools":[{"name":"flood","inputSchema":{"type":"object"}}],"calls":{"flood":{"do":"oversize","bytes":300000}}}`), 0o600)
	pidFile := filepath.Join(e.dir, "big.pid")
	big := "[[server]]\nname = \"big\"\ncommand = [\"/bin/sh\", \"-c\", " +
		strconv.Quote("echo $$ > "+pidFile+"; exec "+bins.fakeup+" --script "+script) + "]\n"
	steady := e.fake("steady", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	h := e.connect(e.config("[limits]\nmessage_bytes = 100000\n", big, steady,
		"[[rule]]\nserver = \"*\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	_, err := h.call(t, "big__flood", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "over 100000 bytes") {
		t.Fatalf("oversized reply: err=%v; want a message naming the limit", err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	eventually(t, "the offending upstream to be stopped", func() bool { return gone(pid) })
	res, err := h.call(t, "steady__echo", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("the other upstream stopped serving after an oversized line: %v", err)
	}
}

// gone reports whether pid has exited (a zombie not yet reaped counts).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	f := strings.Fields(string(st))
	return len(f) > 2 && f[2] == "Z"
}

// Upstream stderr goes to its bounded log file, never to the host's stdout;
// the protocol keeps working while a server floods stderr.
func TestServe_UpstreamStderrGoesToItsLogNotTheHost(t *testing.T) {
	e := newEnv(t)
	noisy := e.fake("noisy", `{"startupStderr":"hello from stderr\n","startupStderrBytes":200000,
		"tools":[{"name":"shout","inputSchema":{"type":"object"}}],"calls":{"shout":{"do":"stderr","text":"during call\n"}}}`)
	h := e.connect(e.config(noisy, "[[rule]]\nserver = \"noisy\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	res, err := h.call(t, "noisy__shout", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("call: %v", err)
	}
	logPath := filepath.Join(e.state, "logs", "noisy.stderr.log")
	eventually(t, "stderr in the log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "hello from stderr") && strings.Contains(string(b), "during call")
	})
	b, _ := os.ReadFile(logPath)
	if n := strings.Count(string(b), "x"); n < 190000 {
		t.Fatalf("stderr log lost data: %d of ~198000 x bytes", n)
	}
	if st, _ := os.Stat(logPath); st.Mode().Perm() != 0o600 {
		t.Fatalf("stderr log mode %v, want 0600", st.Mode().Perm())
	}
}

// A host cancel becomes notifications/cancelled upstream, for the request id
// mcp-guard used.
func TestServe_HostCancelReachesTheUpstream(t *testing.T) {
	e := newEnv(t)
	srv := e.fake("slow", `{"tools":[{"name":"wait","inputSchema":{"type":"object"}}],"calls":{"wait":{"do":"sleep","ms":30000}}}`)
	h := e.connect(e.config(srv, "[[rule]]\nserver = \"slow\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "slow__wait", Arguments: map[string]any{}})
		done <- err
	}()
	eventually(t, "the call to reach the upstream", func() bool { return len(e.calls("slow")) == 1 })
	cancel()
	<-done
	id := string(e.calls("slow")[0].ID)
	eventually(t, "notifications/cancelled upstream", func() bool {
		for _, l := range e.record("slow") {
			if strings.Contains(l, `"notifications/cancelled"`) && strings.Contains(l, `"requestId":`+id) {
				return true
			}
		}
		return false
	})
	// The proxy is still fine.
	if err := h.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping after cancel: %v", err)
	}
}

// Every tools/list page is walked; a cursor loop is refused and only that
// upstream's tools are withheld.
func TestServe_WalksEveryToolsListPage(t *testing.T) {
	e := newEnv(t)
	var tools []string
	for i := range 7 {
		tools = append(tools, `{"name":"t`+strconv.Itoa(i)+`","inputSchema":{"type":"object"}}`)
	}
	paged := e.fake("paged", `{"pageSize":2,"tools":[`+strings.Join(tools, ",")+`]}`)
	loop := e.fake("loopy", `{"cursorLoop":true,"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`)
	h := e.connect(e.config(paged, loop, "[[rule]]\nserver = \"*\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	got := h.toolNames(t)
	slices.Sort(got)
	want := []string{"paged__t0", "paged__t1", "paged__t2", "paged__t3", "paged__t4", "paged__t5", "paged__t6"}
	if !slices.Equal(got, want) {
		t.Fatalf("host sees %v, want %v", got, want)
	}
	if !strings.Contains(h.stderr.String(), "repeated") {
		t.Fatalf("cursor loop not reported:\n%s", h.stderr)
	}
}

// mcp-guard writes its own initialize: it offers 2025-11-25, sends no
// server/discover probe, and accepts an older valid version.
func TestServe_InitializeOffers20251125WithoutDiscover(t *testing.T) {
	e := newEnv(t)
	old := e.fake("old", `{"protocolVersion":"2025-03-26","tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	bad := e.fake("future", `{"protocolVersion":"2099-01-01","tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	h := e.connect(e.config(old, bad, "[[rule]]\nserver = \"*\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	if got := h.toolNames(t); !slices.Equal(got, []string{"old__t"}) {
		t.Fatalf("host sees %v; want only the upstream with a known version", got)
	}
	rec := e.record("old")
	if len(rec) == 0 || !strings.Contains(rec[0], `"method":"initialize"`) || !strings.Contains(rec[0], `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("first message upstream: %v", rec)
	}
	for _, l := range rec {
		if strings.Contains(l, "server/discover") {
			t.Fatalf("mcp-guard sent a discover probe: %s", l)
		}
	}
	if !strings.Contains(h.stderr.String(), "2099-01-01") {
		t.Fatalf("unknown version not reported:\n%s", h.stderr)
	}
}

// Shutting down kills each upstream's whole process group: no orphans.
func TestServe_ShutdownKillsTheWholeProcessGroup(t *testing.T) {
	e := newEnv(t)
	pidFile := filepath.Join(e.dir, "grandchild.pid")
	// The grandchild ignores every catchable signal, as a careless server's
	// helper might: only killing the group reaches it.
	script := filepath.Join(e.dir, "s.json")
	os.WriteFile(script, []byte(`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`), 0o600)
	server := "[[server]]\nname = \"tree\"\ncommand = [\"/bin/sh\", \"-c\", " +
		strconv.Quote("(trap '' HUP INT TERM PIPE; exec sleep 300) & echo $! > "+pidFile+"; exec "+bins.fakeup+" --script "+script) + "]\n"
	h := e.connect(e.config(server, "[[rule]]\nserver = \"tree\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	h.toolNames(t)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("grandchild %d not running before shutdown", pid)
	}
	h.Close()
	eventually(t, "grandchild to be killed", func() bool { return gone(pid) })
}

// A host line over limits.message_bytes ends that host's session; nothing
// reaches the upstream.
func TestServe_OversizedHostLineEndsTheSession(t *testing.T) {
	e := newEnv(t)
	r := e.rawConnect(e.config("[limits]\nmessage_bytes = 65536\n", e.fake("notes", threeTools), threeRules))
	r.send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"notes__read_note","arguments":{"id":"` + strings.Repeat("a", 70000) + `"}}}`)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("mcp-guard kept the session after an oversized host line")
	}
	if !strings.Contains(r.stderr.String(), "exceeds the size limit") {
		t.Fatalf("no clear error:\n%s", r.stderr)
	}
	if n := len(e.calls("notes")); n != 0 {
		t.Fatalf("upstream received %d calls", n)
	}
}
