// Command mcp-guard is an MCP proxy that shows a host only the tools its
// operator classified, checks every call against the operator's rules before
// forwarding it, records every call in a hash-chained ledger, and runs each
// stdio upstream server as a child in its own process group.
//
// Usage:
//
//	mcp-guard demo                   a governed session on built-in defaults
//	mcp-guard init    [--host H]     a starter config from an MCP host's
//	mcp-guard serve   [--config F]   run the proxy on stdio (or --http ADDR)
//	mcp-guard check   [--config F] [--server NAME]   validate a config
//	mcp-guard tools   [--config F]   every upstream tool, prompt and resource: exposed name, class, action
//	mcp-guard pin     list | diff | accept | reject
//	mcp-guard explain S/T 'ARGS'     the decision a call would get, and why
//	mcp-guard watch                  approve or deny waiting calls in this terminal
//	mcp-guard approvals | approve | deny   calls waiting for the operator
//	mcp-guard reset                  let sessions stopped after refused calls continue
//	mcp-guard auth    SERVER | --list | --logout SERVER   sign in to a url server that requires it
//	mcp-guard log     [flags]        recorded calls
//	mcp-guard verify  [flags]        check the ledger's hash chain (and its witnessed heads)
//	mcp-guard wrap    [flags]        have the host start mcp-guard
//	mcp-guard unwrap  [flags]        put back the host's config
//	mcp-guard version
//	mcp-guard help    [CMD]          CMD's usage, flags and an example (also CMD --help)
//
// log, approvals, tools, pin list, sessions and verify take --json: one JSON
// object per line (internal/jsonl), fields documented in the README.
//
// The hidden command sandbox-exec is the sandbox launcher (sandbox):
// serve starts a server with a [server.sandbox] through it.
//
// The hidden command demo-upstream is the notes server demo guards
// (internal/demoserver); demo starts it, through serve, as its upstream.
//
// Exit codes: 0 ok, 1 a check failed or a request was refused, 2 usage or
// config error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `mcp-guard: an MCP proxy that pins, classifies and gates every tool call.

Usage:
  mcp-guard demo                   see what mcp-guard does, on built-in defaults (start here)
  mcp-guard init    [--host H] [--from F] [--config F] [--force]
                                   write a starter config from an MCP host's config (every tool asks). Hosts:
                                   claude-desktop, claude-code, cursor, vscode, windsurf, gemini-cli, zed, codex;
                                   without --host, the one host whose config has servers (several: name one).
                                   Claude Desktop's is $XDG_CONFIG_HOME/Claude/claude_desktop_config.json (Linux;
                                   default ~/.config/Claude/...), on macOS ~/Library/Application Support/Claude/...
  mcp-guard serve   [--config F] [--server NAME] [--scope NAME]   run the proxy on stdio (the host starts this);
                                   --scope: the host's label scope, shared by every serve it starts
                    [--http ADDR [--token-file F] [--allow-host H]]   or on streamable HTTP (loopback unless told)
  mcp-guard check   [--config F] [--server NAME]   validate a config and say what is wrong
  mcp-guard tools   [--config F] [--json]   list every upstream tool, prompt and resource: exposed name, class, action
  mcp-guard pin     list [--json] | diff S/T | accept S/T [--digest D] | reject S/T [--digest D]
                                   see and decide changed tool definitions
  mcp-guard explain S/T 'ARGS-JSON' [--config F] [--session ID|latest] [--labels L1,L2]
                                   the decision a call would get, and why (exit 1 unless allowed);
                                   --session: as the next call of that ledger session, its limits
                                   counted from the ledger and its scope's labels (latest: the
                                   session of the newest call); --labels: as if it held these labels
  mcp-guard test    [FILE...] [--config F] [--schemas F] [--json]
                                   decision tests: each [[case]] of FILE (default config.test.toml
                                   beside the config) decided as explain decides it; exit 1 on a failure
  mcp-guard sessions [--json]      live label scopes: their serve processes, labels, since which call
  mcp-guard declassify SCOPE LABEL --reason R   end a label in a scope (recorded; the next call sees it)
  mcp-guard watch                  approve or deny calls as they wait, in this terminal
  mcp-guard approvals [list] [--state S] [--json] | show ID [--full]   calls waiting for the operator
  mcp-guard approve ID [--shown D]               deny ID [--shown D] [--reason TEXT]
  mcp-guard reset   [--reason TEXT]  let sessions stopped after refused calls continue
  mcp-guard auth    SERVER [--yes] [--no-browser] | --list | --logout SERVER
                                   sign in to a url server that requires it (oauth = {}); the token is kept
                                   owner-only and sent to that server alone
  mcp-guard log     [--server S] [--tool T] [--kind K] [--status X] [--since D] [--limit N] [--before ID] [--follow] [-v] [--labels] [--json]
                                   recorded calls, newest page first; --labels: label events instead
  mcp-guard verify  [--config F | --ledger F] [--witness SOURCE] [--json]
                                   check the ledger's hash chain; with --witness, against the chain heads
                                   a witness holds: journal[:DIR], syslog:PATH, file:PATH, head:SEQ:HASH
  mcp-guard wrap    [--host H] [--from FILE] [--config F] [--per-server] [--dry-run]
                                   have the host start mcp-guard instead of each guarded server (hosts
                                   other than Claude Desktop: each entry in place, as with --per-server)
  mcp-guard unwrap  [--host H] [--from FILE] [--force]   put back the host's config as it was
  mcp-guard version                print the version
  mcp-guard help    [CMD]          this, or CMD's usage, flags and an example

Config: --config, else $MCP_GUARD_CONFIG, else $XDG_CONFIG_HOME/mcp-guard/config.toml
(default ~/.config/mcp-guard/config.toml, on macOS too); init writes it there.
Log: serve logs refusals, asks and problems to stderr; $MCP_GUARD_LOG=debug adds every allowed call
(another value is warned about and ignored).
Help: mcp-guard help CMD (or CMD --help) prints a command's flags and an example.
Machine-readable: --json prints one JSON object per line (fields in the README).
Exit codes: 0 ok, 1 a check failed, 2 usage or config error.
`

// cli is what a subcommand gets from the process: nothing global.
type cli struct {
	// ctx is the command's context: Background in the process; a test's
	// own, that it ends, when a test runs a command in process. serve,
	// watch and log --follow also end on SIGINT or SIGTERM.
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	env            config.EnvFunc
	// exe is the mcp-guard executable: the sandbox launcher serve starts
	// a confined server through. Empty: this process's own.
	exe string
	// term is the raw standard output, for what mcp-guard itself sends the
	// terminal on purpose (watch's bell, the pager): never for text a host,
	// model or server chose. Nil: stdout.
	term io.Writer
}

// exitError carries an exit code up to main.
type exitError struct {
	code  int
	err   error
	usage string // the command's help, printed after the error (a usage error)
}

func (e *exitError) Error() string { return e.err.Error() }

// selfExecutable is the path of this process's executable (os.Args[0] if
// the system cannot say).
func selfExecutable() string {
	if self, err := os.Executable(); err == nil {
		return self
	}
	return os.Args[0]
}

func usageErr(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

func main() {
	// The sandbox launcher (sandbox): mcp-guard re-executed by
	// itself to confine a server and exec it. It runs before anything else
	// reads the environment or the arguments, and never returns unless it
	// could not start the server.
	if len(os.Args) > 1 && os.Args[1] == sandbox.Command {
		err := sandbox.Exec(os.Args[2:])
		fmt.Fprintf(os.Stderr, "mcp-guard: %v\n", err)
		os.Exit(126)
	}
	os.Exit(run(os.Args[1:], cli{ctx: context.Background(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, env: os.LookupEnv}))
}

func run(args []string, c cli) int {
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if c.exe == "" {
		c.exe = selfExecutable()
	}
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return 2
	}
	c, flush := c.forOperator(args[0])
	defer flush()
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		err = cmdServe(rest, c)
	case "check":
		err = cmdCheck(rest, c)
	case "tools":
		err = cmdTools(rest, c)
	case "log":
		err = cmdLog(rest, c)
	case "pin":
		err = cmdPin(rest, c)
	case "explain":
		err = cmdExplain(rest, c)
	case "test":
		err = cmdTest(rest, c)
	case "reset":
		err = cmdReset(rest, c)
	case "auth":
		err = cmdAuth(rest, c)
	case "approvals":
		err = cmdApprovals(rest, c)
	case "approve", "deny":
		err = cmdDecide(cmd, rest, c)
	case "watch":
		err = cmdWatch(rest, c)
	case "verify":
		err = cmdVerify(rest, c)
	case "sessions":
		err = cmdSessions(rest, c)
	case "declassify":
		err = cmdDeclassify(rest, c)
	case "wrap":
		err = cmdWrap(rest, c)
	case "unwrap":
		err = cmdUnwrap(rest, c)
	case "demo":
		err = cmdDemo(rest, c)
	case "init":
		err = cmdInit(rest, c)
	case "demo-upstream": // the notes server `demo` guards (internal/demoserver); not for direct use
		err = cmdDemoUpstream(rest, c)
	case "version", "--version":
		if len(rest) > 0 && isHelpArg(rest[0]) {
			writeHelp(c.stdout, "version", nil)
			return 0
		}
		fmt.Fprintln(c.stdout, "mcp-guard", version)
	case "help", "-h", "--help":
		if len(rest) == 0 {
			fmt.Fprint(c.stdout, usage)
			return 0
		}
		if _, ok := commandDocs()[rest[0]]; !ok || len(rest) > 1 {
			fmt.Fprintf(c.stderr, "mcp-guard help: want one command, got %q\n\n%s", strings.Join(rest, " "), usage)
			return 2
		}
		return run([]string{rest[0], "--help"}, c)
	default:
		fmt.Fprintf(c.stderr, "mcp-guard: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err == nil || errors.Is(err, errHelpShown) {
		return 0
	}
	fmt.Fprintf(c.stderr, "mcp-guard: %v\n", err)
	var ee *exitError
	var ce *config.Error
	switch {
	case errors.As(err, &ee):
		if ee.usage != "" {
			fmt.Fprintf(c.stderr, "\n%s", ee.usage)
		}
		return ee.code
	case errors.As(err, &ce):
		return 2
	}
	return 1
}
