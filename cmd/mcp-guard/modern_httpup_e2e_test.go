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
