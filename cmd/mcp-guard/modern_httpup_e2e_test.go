package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// Protocol 2026-07-28 to url servers (PF7): testdata/modernup served over
// go-sdk's stateless streamable HTTP handler, spoken to statelessly.

// modernHTTPUp starts testdata/modernup over HTTP, recording each request
// (body and Mcp-* headers) to <dir>/<name>.record, and returns a
// [[server]] block for it at protocol; it is stopped with the test.
func (e *env) modernHTTPUp(name, protocol string, extra ...string) string {
	e.t.Helper()
	return e.modernHTTPUpFlags(name, protocol, nil, extra...)
}

// modernHTTPUpFlags is modernHTTPUp with more of modernup's flags.
func (e *env) modernHTTPUpFlags(name, protocol string, flags []string, extra ...string) string {
	e.t.Helper()
	cmd := exec.Command(bins.modern, append([]string{"--http", "127.0.0.1:0", "--record", e.recordPath(name)}, flags...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errs := &lockedBuffer{}
	cmd.Stderr = errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if e.t.Failed() {
			e.t.Logf("modernup --http stderr:\n%s", errs)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		e.t.Fatalf("modernup --http: %q %v\n%s", line, err, errs)
	}
	return fmt.Sprintf("[[server]]\nname = %q\nurl = \"http://%s/mcp\"\nprotocol = %q\n%s\n", name, addr, protocol, strings.Join(extra, "\n"))
}

// recorded is one request the HTTP modernup got: its method, params and
// the Mcp-* headers it came with.
type recorded struct {
	Method  string            `json:"method"`
	Params  json.RawMessage   `json:"params"`
	Headers map[string]string `json:"headers"`
	HTTP    string            `json:"http"` // the HTTP method
	line    string
}

func (e *env) recordedHTTP(name string) []recorded {
	var out []recorded
	for _, l := range e.record(name) {
		var r recorded
		if json.Unmarshal([]byte(l), &r) == nil && r.HTTP != "" {
			r.line = l
			out = append(out, r)
		}
	}
	return out
}

// A legacy host in front of a 2026-07-28 url server: no initialize and no
// session reach it; every request is labelled with the 2026-07-28 headers
// (Mcp-Method, Mcp-Name, and the Mcp-Param-* the tool's x-mcp-header
// asks for, without which the server refuses the call); tools are listed
// and called, the rules' denial is not forwarded.
func TestModernHTTPUp_ListCallDeny(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.modernHTTPUp("dep", "2026-07-28"), modernUpRules)
	var elicited atomic.Int32
	h := e.connectClient(cfg, modernClient(&elicited, true))
	if names := h.toolNames(t); !slices.Equal(names, []string{"dep__deploy", "dep__drop", "dep__echo", "dep__pull", "dep__region", "dep__wait"}) {
		t.Fatalf("tools: %v", names)
	}
	res, err := h.call(t, "dep__echo", map[string]any{"q": "hi"})
	if err != nil || res.IsError || resultText(res) != `echo {"q":"hi"}` {
		t.Fatalf("echo: %v %+v", err, res)
	}
	res, err = h.call(t, "dep__region", map[string]any{"region": "eu-west"})
	if err != nil || res.IsError || resultText(res) != "region eu-west" {
		t.Fatalf("region (needs its Mcp-Param-Region header): %v %q", err, resultText(res))
	}
	if res, err := h.call(t, "dep__drop", map[string]any{}); err != nil || !res.IsError || !strings.Contains(resultText(res), "never") {
		t.Fatalf("drop: %v %+v", err, res)
	}
	var methods []string
	var calls []recorded
	for _, r := range e.recordedHTTP("dep") {
		if r.HTTP != "POST" {
			t.Fatalf("a %s reached the server (2026-07-28 has only POST): %s", r.HTTP, r.line)
		}
		methods = append(methods, r.Method)
		if _, ok := r.Headers["Mcp-Session-Id"]; ok {
			t.Fatalf("a session ID reached the server: %s", r.line)
		}
		if r.Headers["Mcp-Protocol-Version"] != modernVersion || r.Headers["Mcp-Method"] != r.Method {
			t.Fatalf("request without the 2026-07-28 headers: %s", r.line)
		}
		if r.Method == "tools/call" {
			calls = append(calls, r)
		}
	}
	if slices.Contains(methods, "initialize") || !slices.Contains(methods, "server/discover") || !slices.Contains(methods, "subscriptions/listen") {
		t.Fatalf("methods sent to a 2026-07-28 url server: %v", methods)
	}
	if len(calls) != 2 || calls[0].Headers["Mcp-Name"] != "echo" || calls[1].Headers["Mcp-Name"] != "region" || calls[1].Headers["Mcp-Param-Region"] != "eu-west" {
		t.Fatalf("tools/call the server got: %+v", calls)
	}
	if !strings.Contains(string(calls[0].Params), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
		t.Fatalf("a call without the per-request _meta: %s", calls[0].line)
	}
	eventually(t, "echo done and drop denied in the ledger", func() bool {
		ec, dr := e.callRows("echo"), e.callRows("drop")
		return len(ec) == 1 && ec[0].State == "done" && len(dr) == 1 && dr[0].Decision == "deny"
	})
}

// protocol = "auto" to a 2026-07-28 url server: server/discover answers,
// no initialize follows; its input_required during a call reaches the
// legacy host as an elicitation/create, and the answer goes back in the
// retry with the server's requestState: one call in the ledger.
func TestModernHTTPUp_InputRequiredToLegacyHost(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.modernHTTPUp("dep", "auto", "allow_elicitation = true"), modernUpRules)
	var elicited atomic.Int32
	h := e.connectClient(cfg, modernClient(&elicited, true))
	res, err := h.call(t, "dep__deploy", map[string]any{})
	want := `deploy answered {"action":"accept","content":{"sure":true}} state deploy-state-1`
	if err != nil || res.IsError || resultText(res) != want || elicited.Load() != 1 {
		t.Fatalf("deploy: %v %q (host asked %d times)", err, resultText(res), elicited.Load())
	}
	var calls []recorded
	for _, r := range e.recordedHTTP("dep") {
		if r.Method == "initialize" {
			t.Fatalf("auto sent initialize to a 2026-07-28 server: %s", r.line)
		}
		if r.Method == "tools/call" {
			calls = append(calls, r)
		}
	}
	if len(calls) != 2 || !strings.Contains(string(calls[1].Params), `"requestState":"deploy-state-1"`) || !strings.Contains(string(calls[1].Params), `"inputResponses":{"confirm":{"action":"accept"`) {
		t.Fatalf("tools/call the server got: %+v", calls)
	}
	eventually(t, "one deploy call and one elicitation in the ledger", func() bool {
		d, el := e.callRows("deploy"), e.callRows("elicitation/create")
		return len(d) == 1 && d[0].State == "done" && len(el) == 1 && el[0].State == "done"
	})
}

// A 2026-07-28 url server's rug pull: mcp-guard holds subscriptions/listen
// open over HTTP, so the changed tool is withdrawn at once and a call to it
// reaches nothing.
func TestModernHTTPUp_RugPullWithdraws(t *testing.T) {
	e := newEnv(t)
	modernRugPullWithdraws(t, e, e.modernHTTPUp("dep", "2026-07-28"))
}

// protocol = "auto" to a legacy streamable HTTP server (npm
// server-everything): server/discover is refused, initialize follows
// (with its session), and calls work.
func TestModernHTTPUp_AutoFallsBackToLegacy(t *testing.T) {
	e := newEnv(t)
	port := npmHTTPServer(t, "streamableHttp")
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"every\"\nurl = \"http://127.0.0.1:%d/mcp\"\nprotocol = \"auto\"\n", port), everythingHTTPRules)
	h := e.connect(cfg, "2025-11-25")
	res, err := h.call(t, "every__echo", map[string]any{"message": "after auto"})
	if err != nil || res.IsError || resultText(res) != "Echo: after auto" {
		t.Fatalf("echo: %v %q", err, resultText(res))
	}
	if res, err := h.call(t, "every__get-env", map[string]any{}); err != nil || !res.IsError || !strings.Contains(resultText(res), "the environment is not for the model") {
		t.Fatalf("get-env: want the rule's denial, got %v %q", err, resultText(res))
	}
	if !strings.Contains(h.stderr.String(), "server/discover failed; speaking 2025-11-25") {
		t.Fatalf("mcp-guard did not say it fell back:\n%s", h.stderr)
	}
}

// A host's cancelled call to a 2026-07-28 url server ends the call's HTTP
// request, which is how that revision cancels (there is no session for a
// notifications/cancelled to reach): the server's handler sees it, and the
// ledger records the call cancelled.
func TestModernHTTPUp_CancelEndsServerCall(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.modernHTTPUp("dep", "2026-07-28"), modernUpRules)
	var elicited atomic.Int32
	h := e.connectClient(cfg, modernClient(&elicited, true))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.CallTool(ctx, &mcp.CallToolParams{Name: "dep__wait", Arguments: map[string]any{}})
	eventually(t, "the server to have the call", func() bool {
		for _, r := range e.recordedHTTP("dep") {
			if r.Method == "tools/call" && r.Headers["Mcp-Name"] == "wait" {
				return true
			}
		}
		return false
	})
	cancel()
	eventually(t, "the server's handler to see the cancellation", func() bool {
		return slices.Contains(e.record("dep"), `{"event":"wait cancelled"}`)
	})
	eventually(t, "the call recorded cancelled", func() bool {
		w := e.callRows("wait")
		return len(w) == 1 && w[0].State == "cancelled"
	})
}

// A tool whose x-mcp-header annotation is invalid (on an object, not a
// string, integer or boolean) is not dropped silently, as an SDK client
// drops it: it is pinned, withheld from the host, and `mcp-guard tools`
// shows it refused with the reason; a call to it reaches nothing.
func TestModernHTTPUp_BadHeaderAnnotationShownRefused(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"ok","inputSchema":{"type":"object"}},
{"name":"bad","inputSchema":{"type":"object","properties":{"where":{"type":"object","x-mcp-header":"Where"}}}}]}`
	cfg := e.config(e.fake("hx", script), allowAll)
	h := e.connect(cfg, "2025-11-25")
	if names := h.toolNames(t); !slices.Equal(names, []string{"hx__ok"}) {
		t.Fatalf("host sees %v", names)
	}
	if res, err := h.call(t, "hx__bad", map[string]any{}); err == nil && !res.IsError {
		t.Fatalf("call to the refused tool answered %+v", res)
	}
	if n := len(e.calls("hx")); n != 0 {
		t.Fatalf("the refused tool's call reached the server (%d calls)", n)
	}
	out, _ := e.mcpGuard("tools", "--config", cfg)
	if !strings.Contains(out, `hidden: refused: cannot be shown to the host: inputSchema: property "where": x-mcp-header can only be applied to primitive types`) {
		t.Fatalf("`mcp-guard tools` does not show the refused tool and why:\n%s", out)
	}
	eventually(t, "the refused call in the ledger, saying why", func() bool {
		rows := e.callRows("bad")
		return len(rows) == 1 && rows[0].Decision != "allow" && strings.Contains(rows[0].Reason, "x-mcp-header")
	})
	pins, err := e.openLedger().Pins(context.Background(), "hx")
	if err != nil || !slices.ContainsFunc(pins, func(p ledger.Pin) bool { return p.Tool == "bad" }) {
		t.Fatalf("the refused tool is not pinned: %v %+v", err, pins)
	}
}
