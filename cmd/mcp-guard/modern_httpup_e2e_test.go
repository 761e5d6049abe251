package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Protocol 2026-07-28 to url servers (PF7): testdata/modernup served over
// go-sdk's stateless streamable HTTP handler, spoken to statelessly.

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
