package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tsLine is one line testdata/peers/client.mjs printed.
type tsLine struct {
	ID                string          `json:"id"`
	ProtocolVersion   string          `json:"protocolVersion"`
	Tools             []string        `json:"tools"`
	IsError           bool            `json:"isError"`
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Error             *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Progress *float64        `json:"progress"`
	Message  *string         `json:"message"`
	Served   *string         `json:"served"` // a request the server made of the client, answered from the plan's capabilities
	Params   json.RawMessage `json:"params"`
	raw      string
}

func (l tsLine) text() string {
	var cs []struct{ Type, Text string }
	json.Unmarshal(l.Content, &cs)
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Text)
	}
	return b.String()
}

// tsClient is one run of the TypeScript-SDK client script on a plan.
type tsClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *lockedBuffer
	lines  chan tsLine // step results, in order
	exited chan error

	mu       sync.Mutex
	progress []tsLine
	served   []tsLine
	ended    bool // reaped: its process group is no longer ours to kill
}

type tsPlan struct {
	Command      string            `json:"command"`
	Args         []string          `json:"args"`
	Env          map[string]string `json:"env,omitempty"`
	Capabilities *tsCapabilities   `json:"capabilities,omitempty"`
	Steps        []tsStep          `json:"steps"`
}

// tsCapabilities are what the client declares, each with its canned answer.
type tsCapabilities struct {
	Sampling    *tsSampling    `json:"sampling,omitempty"`
	Elicitation *tsElicitation `json:"elicitation,omitempty"`
	Roots       []tsRoot       `json:"roots,omitempty"`
}

type tsSampling struct {
	Text  string `json:"text"`
	Model string `json:"model,omitempty"`
}

type tsElicitation struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

type tsRoot struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

type tsStep struct {
	ID        string `json:"id"`
	Op        string `json:"op"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	TimeoutMs int    `json:"timeoutMs,omitempty"`
	Expect    string `json:"expect,omitempty"`
}

func tsList(id string) tsStep { return tsStep{ID: id, Op: "listTools"} }
func tsCall(id, name string, args any, expect string) tsStep {
	return tsStep{ID: id, Op: "callTool", Name: name, Arguments: args, Expect: expect}
}

// runTS starts node testdata/peers/client.mjs on plan; its output lines
// stream to the returned client.
func runTS(t *testing.T, e *env, plan tsPlan) *tsClient {
	t.Helper()
	script := peerPath(t, "../client.mjs")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	if plan.Command == bins.guard {
		for _, kv := range coverEnv() {
			k, v, _ := strings.Cut(kv, "=")
			plan.Env = maps.Clone(plan.Env)
			if plan.Env == nil {
				plan.Env = map[string]string{}
			}
			plan.Env[k] = v
		}
	}
	pf := filepath.Join(e.dir, fmt.Sprintf("plan-%d.json", time.Now().UnixNano()))
	b, _ := json.Marshal(plan)
	writeFile(t, pf, string(b))
	c := &tsClient{t: t, stderr: &lockedBuffer{}, lines: make(chan tsLine, 64), exited: make(chan error, 1)}
	c.cmd = exec.Command(node, script, pf)
	c.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.dir}
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var l tsLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l = tsLine{ID: "?unparsable", raw: sc.Text()}
			}
			l.raw = sc.Text()
			if l.Progress != nil || l.Served != nil {
				c.mu.Lock()
				if l.Served != nil {
					c.served = append(c.served, l)
				} else {
					c.progress = append(c.progress, l)
				}
				c.mu.Unlock()
				continue
			}
			c.lines <- l
		}
		close(c.lines)
		err := c.cmd.Wait()
		c.mu.Lock()
		c.ended = true
		c.mu.Unlock()
		c.exited <- err
	}()
	t.Cleanup(func() {
		c.mu.Lock()
		if !c.ended {
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
		c.mu.Unlock()
		if t.Failed() {
			t.Logf("client.mjs running %s %v: its stderr and the server's:\n%s", filepath.Base(plan.Command), plan.Args, c.stderr)
		}
	})
	return c
}

// next returns the result line of step id, which must be the next one.
func (c *tsClient) next(id string) tsLine {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			err := <-c.exited
			c.exited <- err
			c.t.Fatalf("client.mjs ended (%v) before step %q\nstderr:\n%s", err, id, c.stderr)
		}
		if l.ID != id {
			c.t.Fatalf("client.mjs printed %s; want step %q next", l.raw, id)
		}
		return l
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no result for step %q\nstderr:\n%s", id, c.stderr)
	}
	return tsLine{}
}

// wait checks the script printed nothing more and exited 0.
func (c *tsClient) wait() {
	c.t.Helper()
	for l := range c.lines {
		c.t.Fatalf("unexpected line from client.mjs: %s", l.raw)
	}
	select {
	case err := <-c.exited:
		if err != nil {
			c.t.Fatalf("client.mjs: %v\nstderr:\n%s", err, c.stderr)
		}
	case <-time.After(20 * time.Second):
		c.t.Fatalf("client.mjs did not exit\nstderr:\n%s", c.stderr)
	}
}

// servedDuring returns the requests the client answered while step id ran.
func (c *tsClient) servedDuring(id string) []tsLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []tsLine
	for _, l := range c.served {
		if l.ID == id {
			out = append(out, l)
		}
	}
	return out
}

func (c *tsClient) progressOf(id string) []tsLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []tsLine
	for _, l := range c.progress {
		if l.ID == id {
			out = append(out, l)
		}
	}
	return out
}

// canonJSON re-encodes raw JSON (maps sorted by key) so that two results
// compare byte for byte whatever their spacing.
func canonJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// sameResult asserts a result through mcp-guard equals the direct one: the
// content array and the structured content, byte for byte once parsed.
func sameResult(t *testing.T, what string, via, direct tsLine) {
	t.Helper()
	if via.IsError || direct.IsError {
		t.Fatalf("%s: an error result (via mcp-guard %s, direct %s)", what, via.raw, direct.raw)
	}
	if a, b := canonJSON(t, via.Content), canonJSON(t, direct.Content); a != b || a == "null" || a == "[]" {
		t.Fatalf("%s: content through mcp-guard differs from the server's own:\nvia:    %s\ndirect: %s", what, a, b)
	}
	if a, b := canonJSON(t, via.StructuredContent), canonJSON(t, direct.StructuredContent); a != b {
		t.Fatalf("%s: structuredContent through mcp-guard differs from the server's own:\nvia:    %s\ndirect: %s", what, a, b)
	}
}

// The official TypeScript SDK client as the host of mcp-guard fronting the
// three npm reference servers: it sees exactly the classified tools,
// namespaced; allowed calls answer exactly what the servers answer directly;
// denied calls come back isError with the rule's reason and never reach the
// server; an ask blocks until the operator approves it from the CLI, then
// runs; an unclassified tool is a protocol error. The ledger records each.
func TestPeers_TSClientThreeServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newThreeServers(t, e)
	hello := filepath.Join(s.root, "hello.txt")
	forbidden := filepath.Join(s.root, "new.txt")
	entity := map[string]any{"entities": []any{map[string]any{"name": "mcp-guard", "entityType": "project", "observations": []any{"guards MCP calls <b>\u00e9</b>"}}}}
	echoArgs := map[string]any{"message": "hello <guard> \u2713"}
	sumArgs := map[string]any{"a": 2, "b": 3.5}

	create := tsCall("create", "memory__create_entities", entity, "ok")
	create.TimeoutMs = 40000 // longer than the operator takes; approval_wait is 20s
	c := runTS(t, e, tsPlan{
		Command: bins.guard, Args: []string{"serve", "--config", s.cfg},
		Env: map[string]string{"HOME": e.dir},
		Steps: []tsStep{
			tsList("tools"),
			tsCall("echo", "every__echo", echoArgs, "ok"),
			tsCall("sum", "every__get-sum", sumArgs, "ok"),
			tsCall("read", "fs__read_text_file", map[string]any{"path": hello}, "ok"),
			tsCall("ls", "fs__list_directory", map[string]any{"path": s.root}, "ok"),
			tsCall("graph0", "memory__read_graph", map[string]any{}, "ok"),
			tsCall("write", "fs__write_file", map[string]any{"path": forbidden, "content": "pwned"}, "isError"),
			create,
			tsCall("delete", "memory__delete_entities", map[string]any{"entityNames": []any{"mcp-guard"}}, "isError"),
			tsCall("graph1", "memory__read_graph", map[string]any{}, "ok"),
			tsCall("hidden", "memory__add_observations", map[string]any{"observations": []any{}}, "error"),
		},
	})
	if l := c.next("initialize"); l.ProtocolVersion != "2025-11-25" {
		t.Fatalf("negotiated %q with the TypeScript SDK, want 2025-11-25: %s", l.ProtocolVersion, l.raw)
	}
	tools := c.next("tools").Tools
	slices.Sort(tools)
	if !slices.Equal(tools, threeServersTools) {
		t.Fatalf("host sees %v, want exactly %v", tools, threeServersTools)
	}
	via := map[string]tsLine{}
	for _, id := range []string{"echo", "sum", "read", "ls", "graph0"} {
		via[id] = c.next(id)
	}
	if !strings.Contains(via["read"].text(), "hello from disk") {
		t.Fatalf("read_text_file through mcp-guard: %s", via["read"].raw)
	}
	write := c.next("write")
	if !write.IsError || !strings.HasPrefix(write.text(), "mcp-guard: call to fs/write_file denied by rule 5: no writes from this host") {
		t.Fatalf("write_file should be denied with rule 5's reason: %s", write.raw)
	}
	if _, err := os.Stat(forbidden); !os.IsNotExist(err) {
		t.Fatalf("the denied write reached server-filesystem: %s exists (%v)", forbidden, err)
	}

	// The ask: the client's call waits while the operator reads it.
	id, shown := e.pendingApproval(s.cfg)
	if show, _ := e.mcpGuard("approvals", "show", id, "--config", s.cfg); !strings.Contains(show, "server    memory\ntool      create_entities\n") || !strings.Contains(show, `"observations": [`) || !strings.Contains(show, "\"guards MCP calls <b>\u00e9</b>\"") {
		t.Fatalf("approvals show does not show the held call:\n%s", show)
	}
	eventually(t, "a progress notification naming the approval", func() bool {
		for _, p := range c.progressOf("create") {
			if p.Message != nil && strings.Contains(*p.Message, "mcp-guard approve "+id) {
				return true
			}
		}
		return false
	})
	if b, _ := os.ReadFile(s.memFile); bytes.Contains(b, []byte("mcp-guard")) {
		t.Fatalf("the held call reached server-memory before approval:\n%s", b)
	}
	select {
	case l := <-c.lines:
		t.Fatalf("the held call answered before approval: %s", l.raw)
	default:
	}
	if out, code := e.mcpGuard("approve", id, "--config", s.cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	via["create"] = c.next("create")
	if via["create"].IsError || !strings.Contains(via["create"].text(), `"mcp-guard"`) {
		t.Fatalf("the approved create_entities: %s", via["create"].raw)
	}
	del := c.next("delete")
	if !del.IsError || !strings.HasPrefix(del.text(), "mcp-guard: call to memory/delete_entities denied by rule 8: the graph is append-only here") {
		t.Fatalf("delete_entities should be denied with rule 8's reason: %s", del.raw)
	}
	via["graph1"] = c.next("graph1")
	if !strings.Contains(via["graph1"].text(), `"name": "mcp-guard"`) {
		t.Fatalf("read_graph after the approved create (and the denied delete) lacks the entity: %s", via["graph1"].raw)
	}
	if hidden := c.next("hidden"); hidden.Error == nil || !strings.Contains(hidden.Error.Message, "memory__add_observations") {
		t.Fatalf("an unclassified tool should be a protocol error: %s", hidden.raw)
	}
	c.wait()

	// The same calls made directly to each server, without mcp-guard; the
	// memory server starts from an empty graph of its own.
	direct := map[string]tsLine{}
	plans := []struct {
		script string
		args   []string
		env    map[string]string
		steps  []tsStep
	}{
		{everythingJS, []string{"stdio"}, nil, []tsStep{tsCall("echo", "echo", echoArgs, "ok"), tsCall("sum", "get-sum", sumArgs, "ok")}},
		{filesystemJS, []string{s.root}, nil, []tsStep{tsCall("read", "read_text_file", map[string]any{"path": hello}, "ok"), tsCall("ls", "list_directory", map[string]any{"path": s.root}, "ok")}},
		{memoryJS, nil, map[string]string{"MEMORY_FILE_PATH": filepath.Join(e.dir, "direct-memory.jsonl")}, []tsStep{
			tsList("tools"), // so the SDK checks structuredContent against each outputSchema, as it did through mcp-guard
			tsCall("graph0", "read_graph", map[string]any{}, "ok"), tsCall("create", "create_entities", entity, "ok"), tsCall("graph1", "read_graph", map[string]any{}, "ok")}},
	}
	for _, p := range plans {
		d := runTS(t, e, tsPlan{Command: "node", Args: append([]string{peerPath(t, p.script)}, p.args...), Env: p.env, Steps: p.steps})
		d.next("initialize")
		for _, st := range p.steps {
			direct[st.ID] = d.next(st.ID)
		}
		d.wait()
	}
	for _, id := range []string{"echo", "sum", "read", "ls", "graph0", "create", "graph1"} {
		sameResult(t, id, via[id], direct[id])
	}

	// The ledger: each call, with its decision and outcome.
	var logOut string
	var missing []string
	defer func() {
		if t.Failed() && missing != nil {
			t.Logf("mcp-guard log lacks %q:\n%s", missing, logOut)
		}
	}()
	eventually(t, "every call's outcome in the ledger", func() bool {
		out, code := e.mcpGuard("log", "--config", s.cfg)
		logOut, missing = out, []string{}
		for _, want := range []string{
			"every/echo allow done rule=1", "every/get-sum allow done rule=2",
			"fs/read_text_file allow done rule=3", "fs/list_directory allow done rule=4",
			"fs/write_file deny refused rule=5", "memory/create_entities ask done rule=7",
			"memory/delete_entities deny refused rule=8", "memory/add_observations unknown_tool refused reason=the tool is not exposed: no rule matches it",
		} {
			if code != 0 || !strings.Contains(out, want) {
				missing = append(missing, want)
			}
		}
		if n := strings.Count(out, "memory/read_graph allow done rule=6"); n != 2 {
			missing = append(missing, fmt.Sprintf("memory/read_graph allow done rule=6 (twice, not %d times)", n))
		}
		return len(missing) == 0
	})
	missing = nil
	if out, code := e.mcpGuard("verify", "--config", s.cfg); code != 0 {
		t.Fatalf("verify (exit %d): %s", code, out)
	}
}
