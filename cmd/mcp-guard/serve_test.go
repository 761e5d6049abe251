package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
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

// An allowed call reaches the upstream with the host's argument bytes.
func TestServe_AllowedCallForwardsArgumentBytes(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// An upstream that writes a line over limits.message_bytes is stopped; the
// proxy and the other upstreams keep running.
func TestServe_OversizedUpstreamLineDropsOnlyThatUpstream(t *testing.T) {
	t.Parallel()
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
// the protocol keeps working while a server floods stderr. A child that
// crashes mid-call fails that call at once, saying it exited, and its last
// words are in its log.
func TestServe_UpstreamStderrGoesToItsLogNotTheHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noisy := e.fake("noisy", `{"startupStderr":"hello from stderr\n","startupStderrBytes":200000,
		"tools":[{"name":"shout","inputSchema":{"type":"object"}},{"name":"die","inputSchema":{"type":"object"}}],
		"calls":{"shout":{"do":"stderr","text":"during call\n"},"die":{"do":"crash","stderr":"goodbye"}}}`)
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
	if _, err := h.call(t, "noisy__die", map[string]any{}); err == nil || !strings.Contains(err.Error(), `upstream "noisy" exited`) {
		t.Fatalf("call to a crashing child: err=%v; want it to say the upstream exited", err)
	}
	eventually(t, "the crashed child's last words in its log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "goodbye")
	})
}

// Shutting down kills each upstream's whole process group: no orphans.
func TestServe_ShutdownKillsTheWholeProcessGroup(t *testing.T) {
	t.Parallel()
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
