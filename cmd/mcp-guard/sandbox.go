package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

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
	// A relative program runs from the server's directory, as exec.Command
	// runs it; the policy names it absolutely.
	base := s.Cwd
	if base == "" {
		base, _ = os.Getwd()
	}
	absolute := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	abs := absolute(program)
	args := make([]string, 0, len(s.Command)-1)
	for _, a := range s.Command[1:] {
		args = append(args, absolute(a)) // Effective reads what names an existing file
	}
	home, _ := config.XDGDir("HOME", env)
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	sb := &proxy.UpstreamSandbox{
		Launcher: self,
		Program:  program,
		Policy:   sandbox.Effective(*user, abs, args, home),
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

// checkSandboxes reports, for check, the kernel's Landlock ABI and what
// each server's sandbox enforces, and warns of what a sandbox will stop.
func checkSandboxes(cfg *config.Config, c cli) {
	any := false
	for _, s := range cfg.Servers {
		sb := serverSandbox(s, c.env)
		if sb == nil {
			continue
		}
		if !any {
			abi, sec := sandbox.Probe()
			fmt.Fprintf(c.stdout, "sandbox: %s, Landlock ABI %d, seccomp filter %s\n", runtime.GOOS, abi, map[bool]string{true: "available", false: "not available"}[sec])
			any = true
		}
		fmt.Fprintf(c.stdout, "server %s: %s\n", s.Name, sandboxSummary(sb))
		if fetchesAtStart(s.Command) {
			fmt.Fprintf(c.stdout, "warning: server %s: %s fetches the package at start, which needs the network and writes to the npm cache that its sandbox does not grant; install the server first (npm install -g PACKAGE, or npm install in a directory) and name its installed command\n", s.Name, strings.Join(s.Command[:min(len(s.Command), 3)], " "))
		}
		for _, list := range [][]string{s.Sandbox.Read, s.Sandbox.Write} {
			for _, p := range list {
				if _, err := os.Stat(p); err != nil {
					fmt.Fprintf(c.stdout, "warning: server %s: sandbox path %s: %v (it grants nothing)\n", s.Name, p, errors.Unwrap(err))
				}
			}
		}
	}
}

// fetchesAtStart reports whether command downloads its package as it
// starts: npx -y / --yes, or npm exec, pnpm dlx, bunx, uvx, pipx run.
func fetchesAtStart(command []string) bool {
	if len(command) == 0 {
		return false
	}
	prog := filepath.Base(command[0])
	args := command[1:]
	switch prog {
	case "npx":
		return slices.Contains(args, "-y") || slices.Contains(args, "--yes")
	case "npm", "pnpm":
		return len(args) > 0 && (args[0] == "exec" || args[0] == "dlx" || args[0] == "x")
	case "bunx", "uvx", "pnpx":
		return true
	case "pipx", "uv":
		return len(args) > 0 && (args[0] == "run" || args[0] == "tool")
	}
	return false
}

// proposeSandbox is init's commented [server.sandbox] for a server started
// with command: the directories among its arguments to read (and, for the
// filesystem server, to write), no network.
func proposeSandbox(command []string) string {
	var dirs []string
	for _, a := range command[1:] {
		if fi, err := os.Stat(a); err == nil && fi.IsDir() && filepath.IsAbs(a) {
			dirs = append(dirs, filepath.Clean(a))
		}
	}
	quoted := make([]string, len(dirs))
	for i, d := range dirs {
		quoted[i] = tomlString(d)
	}
	list := "[" + strings.Join(quoted, ", ") + "]"
	var b strings.Builder
	b.WriteString("# A sandbox (Linux): the kernel confines the server's process to what it names,\n")
	b.WriteString("# beside the system's libraries and certificates; \"mcp-guard check\" says what it enforces.\n")
	if fetchesAtStart(command) {
		b.WriteString("# This command fetches its package at start, which needs what a sandbox refuses\n# (the network, writing the cache): install the server first and name its command.\n")
	}
	b.WriteString("# [server.sandbox]\n")
	fmt.Fprintf(&b, "# read = %s   # read (and run) only beneath these\n", list)
	writes := "[]"
	for _, a := range command {
		if strings.Contains(a, "server-filesystem") {
			writes = list
		}
	}
	fmt.Fprintf(&b, "# write = %s   # write only beneath these\n", writes)
	b.WriteString("# network = \"none\"   # or \"all\", or { connect = [443], udp = false }\n")
	return b.String()
}
