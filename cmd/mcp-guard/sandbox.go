package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/sandbox"
	"github.com/mcp-guard/mcp-guard/upstream"
)

// testABIEnv, in mcp-guard's own environment (never the server's), makes
// sandboxed starts act as if the kernel's Landlock ABI were at most its
// value: the tests of the fail-closed path use it.
const testABIEnv = "MCP_GUARD_TEST_LANDLOCK_ABI_MAX"

// serverSandbox is how a stdio server with a [server.sandbox] is confined:
// the configured policy and the launcher (this binary, c.exe). Nil
// without a sandbox.
func serverSandbox(s config.ServerConfig, c cli) *upstream.Sandbox {
	user := s.SandboxPolicy()
	if user == nil || len(s.Command) == 0 {
		return nil
	}
	home, _ := config.XDGDir("HOME", c.env)
	sb := &upstream.Sandbox{Launcher: c.exe, Policy: *user, Home: home}
	if v, ok := c.env(testABIEnv); ok {
		sb.ABIMax, _ = strconv.Atoi(v)
	}
	return sb
}

// sandboxSummary says what the kernel enforces of a server's sandbox.
func sandboxSummary(s config.ServerConfig, sb *upstream.Sandbox) string {
	_, eff, err := sandbox.ForCommand(sb.Policy, s.Command, s.Cwd, sb.Home)
	if err != nil {
		return fmt.Sprintf("sandbox: %v", err)
	}
	pl := sandbox.ProbePlan(eff, runtime.GOOS, sb.ABIMax)
	out := fmt.Sprintf("sandbox %s: %s; %s", eff.Digest()[:19], eff, pl.Summary())
	switch {
	case pl.Complete():
	case pl.OS != "linux" || !eff.BestEffort:
		out += " (it will not start: fail closed)"
	default:
		out += " (best_effort: it starts without them)"
	}
	return out
}

// checkSandboxes reports, for check, the kernel's Landlock ABI and what
// each server's sandbox enforces, and warns of what a sandbox will stop.
func checkSandboxes(cfg *config.Config, c cli) {
	any := false
	for _, s := range cfg.Servers {
		sb := serverSandbox(s, c)
		if sb == nil {
			continue
		}
		if !any {
			abi, sec := sandbox.Probe()
			fmt.Fprintf(c.stdout, "sandbox: %s, Landlock ABI %d, seccomp filter %s\n", runtime.GOOS, abi, map[bool]string{true: "available", false: "not available"}[sec])
			any = true
		}
		fmt.Fprintf(c.stdout, "server %s: %s\n", s.Name, sandboxSummary(s, sb))
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
