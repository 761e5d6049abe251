package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/internal/sandbox"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// testABIEnv, in mcp-guard's own environment (never the server's), makes
// sandboxed starts act as if the kernel's Landlock ABI were at most its
// value: the tests of the fail-closed path use it.
const testABIEnv = "MCP_GUARD_TEST_LANDLOCK_ABI_MAX"

// serverSandbox is how a stdio server with a [server.sandbox] is confined:
// its effective policy (the configured one plus the runtime defaults for
// its program and arguments) and the launcher. Nil without a sandbox.
func serverSandbox(s config.ServerConfig, env envFunc) *proxy.UpstreamSandbox {
	user := s.SandboxPolicy()
	if user == nil || len(s.Command) == 0 {
		return nil
	}
	program := s.Command[0]
	if p, err := exec.LookPath(program); err == nil { // as exec.Command would, on mcp-guard's PATH
		program = p
	}
	home, _ := config.XDGDir("HOME", env)
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	sb := &proxy.UpstreamSandbox{
		Launcher: self,
		Program:  program,
		Policy:   sandbox.Effective(*user, program, s.Command[1:], home),
	}
	if v, ok := env(testABIEnv); ok {
		sb.ABIMax, _ = strconv.Atoi(v)
	}
	return sb
}

// sandboxSummary says what the kernel enforces of a server's sandbox.
func sandboxSummary(sb *proxy.UpstreamSandbox) string {
	pl := sandbox.ProbePlan(sb.Policy, runtime.GOOS, sb.ABIMax)
	s := fmt.Sprintf("sandbox %s: %s; %s", sb.Policy.Digest()[:19], sb.Policy, pl.Summary())
	switch {
	case pl.Complete():
	case pl.OS != "linux" || !sb.Policy.BestEffort:
		s += " (it will not start: fail closed)"
	default:
		s += " (best_effort: it starts without them)"
	}
	return s
}
