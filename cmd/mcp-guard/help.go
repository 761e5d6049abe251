package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandDoc is what `mcp-guard CMD --help` prints besides the flags, which
// come from the command's own FlagSet: one mechanism for every command.
type commandDoc struct {
	synopsis string // after "mcp-guard "
	summary  string
	example  string
}

// commandDocs returns the help of each command, by name.
func commandDocs() map[string]commandDoc {
	return map[string]commandDoc{
		"demo": {"demo", "A governed session on built-in defaults: a notes server, a scripted host, the rules, the ledger.", "mcp-guard demo"},
		"init": {"init [--host H] [--from F] [--config F] [--force] [--timeout D]",
			"Write a starter config from an MCP host's (claude-desktop, claude-code, cursor, vscode, windsurf, gemini-cli, zed, codex): every tool asks. Without --host, the one host whose config has servers.",
			"mcp-guard init --host cursor"},
		"serve": {"serve [--config F] [--server NAME] [--scope NAME] [--http ADDR [--token-file F] [--allow-host H] [--idle-ttl D]]",
			"Run the proxy on stdio (the host starts this), or on streamable HTTP with --http (loopback unless told).",
			"mcp-guard serve --config ~/.config/mcp-guard/config.toml --server files"},
		"check": {"check [--config F] [--server NAME]", "Validate a config and say what is wrong (exit 1 or 2 when something is).", "mcp-guard check --config config.toml"},
		"tools": {"tools [--config F] [--json]", "Start every upstream and list its tools, prompts and resources: exposed name, pin, class, action, rule.", "mcp-guard tools --json"},
		"pin": {"pin list [--server S] [--json] | diff S/T | accept S/T [--digest D] | reject S/T [--digest D]",
			"See pinned tool definitions and decide changed ones. SERVER/ (no tool) names the server's instructions.",
			"mcp-guard pin diff files/read_file"},
		"explain": {"explain SERVER/TOOL 'ARGS-JSON' [--config F] [--session ID|latest] [--labels L1,L2]",
			"The decision a call would get, and why (exit 1 unless it would be forwarded).",
			`mcp-guard explain files/read_file '{"path":"/etc/passwd"}'`},
		"test": {"test [FILE...] [--config F] [--schemas F] [--json]",
			"Decision tests for the rules: each [[case]] of FILE (config.test.toml beside the config) decided as explain decides it (exit 1 when one fails).",
			"mcp-guard test"},
		"sessions": {"sessions [--config F | --ledger F] [--json]", "Live label scopes: their serve processes, labels, and the call that brought each.", "mcp-guard sessions --json"},
		"declassify": {"declassify SCOPE LABEL --reason R [--config F | --ledger F]", "End a label in a scope (recorded; the scope's next call no longer holds it).",
			"mcp-guard declassify claude-desktop private --reason 'reviewed the file'"},
		"watch": {"watch [--config F | --ledger F]", "Approve or deny calls as they wait, in this terminal.", "mcp-guard watch"},
		"approvals": {"approvals [list] [--state S] [--limit N] [--before ID] [--json] | show ID [--full]", "Calls waiting for the operator (pending first page by default), or one of them.",
			"mcp-guard approvals --state '' --json"},
		"approve": {"approve ID [--shown D]", "Let a waiting call go on. --shown names the digest of the presentation you read (approvals show prints it).", "mcp-guard approve 12 --shown 3f1c..."},
		"deny":    {"deny ID [--shown D] [--reason TEXT]", "Refuse a waiting call; the model reads the reason.", "mcp-guard deny 12 --reason 'not that file'"},
		"reset":   {"reset [--reason TEXT]", "Let sessions stopped after refused calls continue.", "mcp-guard reset --reason 'checked the host'"},
		"log": {"log [--server S] [--tool T] [--kind K] [--status X] [--since D] [--limit N] [--before ID] [--follow] [-v] [--labels] [--json]",
			"Recorded calls, newest page first (oldest of the page first); --labels: label events instead.",
			"mcp-guard log --server files --since 24h --json"},
		"verify": {"verify [--config F | --ledger F] [--witness SOURCE] [--json]",
			"Check the ledger's hash chain; with --witness, against the chain heads a witness holds (journal[:DIR], syslog:PATH, file:PATH, head:SEQ:HASH).",
			"mcp-guard verify --witness journal"},
		"wrap":   {"wrap [--host H] [--from FILE] [--config F] [--per-server] [--dry-run]", "Have the host start mcp-guard instead of each guarded server.", "mcp-guard wrap --host cursor --dry-run"},
		"unwrap": {"unwrap [--host H] [--from FILE] [--force]", "Put back the host's config as it was before wrap (for files the host rewrites, only the entries wrap changed).", "mcp-guard unwrap --host cursor"},
		"auth": {"auth SERVER [--config F] [--yes] [--no-browser] | --list | --logout SERVER",
			"Sign in to a url server that requires it (oauth = {} in its [[server]]): mcp-guard keeps the token and sends it to that server only.",
			"mcp-guard auth github"},
		"version": {"version", "Print the version.", "mcp-guard version"},
	}
}

// errHelpShown tells run a command printed its help: exit 0, nothing more.
var errHelpShown = errors.New("help shown")

// parseFlags parses args with fs. -h or --help prints the command's help to
// the standard output (errHelpShown: exit 0); any other error is a usage
// error (exit 2) that carries the command's help for the standard error.
func parseFlags(fs *flag.FlagSet, args []string, c cli) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		writeHelp(c.stdout, commandOf(fs), fs)
		return errHelpShown
	}
	var b strings.Builder
	writeHelp(&b, commandOf(fs), fs)
	return &exitError{code: 2, err: fmt.Errorf("%s: %v", fs.Name(), err), usage: b.String()}
}

// commandOf is the command a FlagSet belongs to: "pin list" is pin's.
func commandOf(fs *flag.FlagSet) string {
	name, _, _ := strings.Cut(fs.Name(), " ")
	return name
}

// writeHelp prints cmd's usage, summary, every flag of fs (nil: none) with
// its meaning and default, and an example.
func writeHelp(w io.Writer, cmd string, fs *flag.FlagSet) {
	d, ok := commandDocs()[cmd]
	if !ok {
		d = commandDoc{synopsis: cmd}
	}
	fmt.Fprintf(w, "usage: mcp-guard %s\n\n", d.synopsis)
	if d.summary != "" {
		fmt.Fprintf(w, "%s\n\n", d.summary)
	}
	if fs != nil {
		n := 0
		fs.VisitAll(func(f *flag.Flag) {
			if n == 0 {
				fmt.Fprintln(w, "flags:")
			}
			n++
			arg, meaning := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			fmt.Fprintf(w, "  %s%s", dash, f.Name)
			if arg != "" {
				fmt.Fprintf(w, " %s", strings.ToUpper(arg))
			}
			fmt.Fprintf(w, "\n      %s", meaning)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
		if n > 0 {
			fmt.Fprintln(w)
		}
	}
	if d.example != "" {
		fmt.Fprintf(w, "example:\n  %s\n", d.example)
	}
}

// isHelpArg reports whether a is -h, --help or -help.
func isHelpArg(a string) bool { return a == "-h" || a == "--help" || a == "-help" }
