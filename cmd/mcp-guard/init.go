package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/hostconfig"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/oauth"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/proxy"
	"github.com/mcp-guard/mcp-guard/upstream"
)

// initServer is one Claude Desktop server as init turns it into a [[server]].
type initServer struct {
	cfg   config.ServerConfig
	tools []pin.Tool
	err   error  // could not be started or listed
	signs string // the url server asks for sign-in (OAuth) at this issuer
}

// cmdInit reads the Claude Desktop config, starts each server to list its
// tools, and writes a starter mcp-guard config (0600) in which every tool
// asks the operator. Env values move into that file and are never printed.
func cmdInit(args []string, c cli) error {
	fset := flag.NewFlagSet("init", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	from := fset.String("from", "", "the host's config file to read (default: where the host keeps it)")
	host := fset.String("host", "", "the MCP host whose config to read: "+strings.Join(hostconfig.Names(), ", "))
	out := fset.String("config", "", "mcp-guard config to write")
	force := fset.Bool("force", false, "replace an existing mcp-guard config")
	timeout := fset.Duration("timeout", 60*time.Second, "how long each server may take to start and list its tools")
	if err := parseFlags(fset, args, c); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return usageErr("init: unexpected argument %q", fset.Arg(0))
	}
	if *timeout <= 0 {
		return usageErr("init: --timeout %s: want a positive duration such as 60s", *timeout)
	}
	hf, err := resolveHost("init", *host, *from, c, false)
	if err != nil {
		return err
	}
	src, entries, err := hf.readEntries(c)
	if err != nil {
		return err
	}
	dst, err := configPath(*out, c.env)
	if err != nil {
		return usageErr("init: %v", err)
	}
	if _, err := os.Lstat(dst); err == nil && !*force {
		return usageErr("init: %s already exists; edit it, write elsewhere with --config, or replace it with --force", dst)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("init: %w", err)
	}
	ledgerPath, err := config.DefaultLedgerPath(c.env)
	if err != nil {
		return usageErr("init: %v", err)
	}

	servers := initServers(entries, hf, dst, c)
	if len(servers) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("init: %s has no server mcp-guard can guard; nothing written", src)}
	}

	log := operatorLog(c.stderr, slog.LevelError)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := upstream.Spec{Name: s.cfg.Name, Command: s.cfg.Command, Env: s.cfg.ChildEnv(c.env)}
			if s.cfg.URL != "" {
				spec = upstream.Spec{Name: s.cfg.Name, URL: s.cfg.URL, Header: s.cfg.UpstreamHeader(c.env)}
			}
			s.tools, s.err = proxy.ListTools(ctx, spec, listLimits(*timeout), filepath.Join(filepath.Dir(ledgerPath), "logs"), version, log)
			if s.err != nil && s.cfg.URL != "" && s.cfg.TokenEnv == "" && len(s.cfg.Headers) == 0 {
				// A remote server the host signs in to: mcp-guard will.
				if d, err := oauth.Discover(ctx, oauthHTTPClient(), s.cfg.URL); err == nil {
					s.signs, s.err, s.cfg.OAuth = d.AS.Issuer, nil, &config.OAuthConfig{}
				}
			}
		}()
	}
	wg.Wait()

	home, _ := c.env("HOME")
	text := renderInitConfig(src, hf.host.Title+"'s config", servers, home)
	if err := writeConfigFile(dst, []byte(text), c.env); err != nil {
		return fmt.Errorf("init: %w", err)
	}

	rules, failed := 0, 0
	var signIns []string
	for _, s := range servers {
		if s.signs != "" {
			signIns = append(signIns, s.cfg.Name)
			fmt.Fprintf(c.stdout, "server %s: signs in at %s (OAuth): run mcp-guard auth %s, then mcp-guard tools lists its tools; each asks until you write its rules\n", s.cfg.Name, s.signs, s.cfg.Name)
			continue
		}
		if s.err != nil {
			failed++
			fmt.Fprintf(c.stdout, "server %s: could not list its tools: %s\n", s.cfg.Name, safetext.Show(s.err.Error(), 300))
			continue
		}
		rules += len(s.tools)
		fmt.Fprintf(c.stdout, "server %s: %s, each set to ask\n", s.cfg.Name, plural(len(s.tools), "tool"))
	}
	fmt.Fprintf(c.stdout, "wrote %s (0600): %d servers, %d rules\n", dst, len(servers), rules)
	writeInitCases(c, dst, servers)
	for _, name := range signIns {
		fmt.Fprintf(c.stdout, "next for %s: mcp-guard auth %s   (mcp-guard keeps its token and sends it to that server only)\n", name, name)
	}
	fmt.Fprintf(c.stdout, `next:
  1. edit the rules in %s: allow what is safe, deny what is not
  2. mcp-guard tools       see what the host will be shown
  3. mcp-guard wrap%s        make %s start mcp-guard (mcp-guard unwrap undoes it)
  4. mcp-guard watch       approve or deny the calls that ask
`, dst, hf.flag(), hf.host.Title)
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("init: %d of %d servers could not be listed; their tools have no rules, so the host is shown none of them", failed, len(servers))}
	}
	return nil
}

// renderInitConfig writes the starter config: the servers, then one rule per
// tool, each asking, with what the server claims about the tool shown as a
// comment the operator should not trust.
func renderInitConfig(src, from string, servers []*initServer, home string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# mcp-guard config written by "mcp-guard init" from
#   %s
# Every tool below asks before it runs. Make each rule yours: set the class
# (read, write, destructive, network, exec) and the action (allow, ask, deny),
# add "when" predicates on arguments, or delete a rule to hide its tool.
# The first matching rule wins; a tool, prompt or resource no rule matches is
# not shown to the host (each server's prompt and resource rules are below,
# commented out).
# Labels (commented suggestions below) say what a call brings into the host's
# session: once it holds "private", a network call asks; once it holds
# "untrusted", an exec or destructive call asks (the default flows; write
# [[flow]] tables to choose your own, or flows = [] for none).
# Check with: mcp-guard check && mcp-guard tools

[pin]
mode = "tofu"   # a server's first listing is pinned; a tool it adds or changes later waits for "mcp-guard pin accept"
`, safeComment(src, 300))
	for _, s := range servers {
		fmt.Fprintf(&b, "\n[[server]]\nname = %s\n", tomlString(s.cfg.Name))
		if s.cfg.URL != "" {
			fmt.Fprintf(&b, "url = %s\n", tomlString(s.cfg.URL))
			if s.cfg.OAuth != nil {
				fmt.Fprintf(&b, "oauth = {}   # it signs in at %s: run mcp-guard auth %s\n", safeComment(s.signs, 200), s.cfg.Name)
			}
			if s.cfg.TokenEnv != "" {
				fmt.Fprintf(&b, "token_env = %s   # the host sets it when it starts mcp-guard\n", tomlString(s.cfg.TokenEnv))
			}
			if len(s.cfg.Headers) > 0 {
				b.WriteString("[server.headers]   # moved from " + from + "; keep this file private\n")
				for _, k := range sortedKeys(s.cfg.Headers) {
					fmt.Fprintf(&b, "%s = %s\n", tomlString(k), tomlString(s.cfg.Headers[k]))
				}
			}
			continue
		}
		b.WriteString("command = [")
		for i, a := range s.cfg.Command {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tomlString(a))
		}
		b.WriteString("]\npass_env = [")
		for i, k := range s.cfg.PassEnv {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tomlString(k))
		}
		b.WriteString("]\n")
		if s.cfg.Cwd != "" {
			fmt.Fprintf(&b, "cwd = %s\n", tomlString(s.cfg.Cwd))
		}
		if len(s.cfg.Env) > 0 {
			b.WriteString("[server.env]   # moved from " + from + "; keep this file private\n")
			for _, k := range sortedKeys(s.cfg.Env) {
				fmt.Fprintf(&b, "%s = %s\n", tomlString(k), tomlString(s.cfg.Env[k]))
			}
		}
		b.WriteString(proposeSandbox(s.cfg.Command))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "\n# ---- %s ", s.cfg.Name)
		switch {
		case s.signs != "":
			fmt.Fprintf(&b, "----\n# It signs in (OAuth): run \"mcp-guard auth %s\", then \"mcp-guard tools\" lists its tools.\n"+
				"# Until you write a rule for each, every one of them asks.\n[[rule]]\nserver = %s\ntool = \"*\"\nclass = \"write\"\naction = \"ask\"\n",
				s.cfg.Name, tomlString(s.cfg.Name))
			writeContentRules(&b, s.cfg.Name)
			continue
		case s.err != nil:
			fmt.Fprintf(&b, "----\n# Its tools could not be listed: %s\n# Once it starts, \"mcp-guard tools\" lists them; add a rule for each.\n", safeComment(s.err.Error(), 300))
			writeContentRules(&b, s.cfg.Name)
			continue
		case len(s.tools) == 0:
			b.WriteString("----\n# It lists no tools.\n")
			writeContentRules(&b, s.cfg.Name)
			continue
		}
		fmt.Fprintf(&b, "(%d tools) ----\n", len(s.tools))
		for _, t := range s.tools {
			b.WriteString("\n")
			if d := firstLine(t.Description); d != "" {
				fmt.Fprintf(&b, "# %s\n", safeComment(d, 160))
			}
			if h := toolHints(t.Annotations); h != "" {
				fmt.Fprintf(&b, "# the server says (not checked, do not trust): %s\n", h)
			}
			fmt.Fprintf(&b, "[[rule]]\nserver = %s\ntool = %s\nclass = \"write\"   # read, write, destructive, network or exec\naction = \"ask\"    # allow, ask or deny\n",
				tomlString(s.cfg.Name), tomlString(globQuote(t.Name)))
			if l := suggestLabel(s.cfg, t.Name, home); l != "" {
				b.WriteString(l)
			}
		}
		writeContentRules(&b, s.cfg.Name)
	}
	return b.String()
}

// writeContentRules writes a server's prompt and resource rules, commented
// out: without a rule its prompts and resources are hidden from the host,
// and the file says so where the operator edits it.
func writeContentRules(b *strings.Builder, server string) {
	for _, kind := range []string{"prompt", "resource"} {
		fmt.Fprintf(b, "\n# Without a %s rule, no %s of %s is shown to the host (\"mcp-guard tools\" lists them). Uncomment and allow or deny:\n", kind, kind, server)
		fmt.Fprintf(b, "# [[rule]]\n# server = %s\n# %s = \"*\"\n# action = \"deny\"    # allow or deny (no ask for %ss)\n", tomlString(server), kind, kind)
	}
}

// suggestLabel is a commented labels line for a tool init recognises, or
// "": reads of a filesystem-like server over the home directory may bring
// private data; fetch and browser tools bring content from the web, which
// may carry instructions. The operator decides: the line is commented.
func suggestLabel(s config.ServerConfig, tool, home string) string {
	lower := strings.ToLower(tool)
	has := func(str string, subs ...string) bool {
		for _, sub := range subs {
			if strings.Contains(str, sub) {
				return true
			}
		}
		return false
	}
	cmd := strings.ToLower(strings.Join(s.Command, " "))
	if has(lower, "fetch", "browse", "navigate", "scrape", "http", "web", "url", "screenshot") ||
		has(cmd, "fetch", "browser", "puppeteer", "playwright") {
		return "# labels = [\"untrusted\"]   # suggested: web content may carry instructions; then exec and destructive calls ask\n"
	}
	underHome := false
	for _, a := range s.Command[min(1, len(s.Command)):] {
		if home != "" && (a == home || strings.HasPrefix(a, home+"/") || strings.HasPrefix(a, "~")) {
			underHome = true
		}
	}
	if (has(cmd, "filesystem") || underHome) && has(lower, "read", "get_file", "list", "search", "directory_tree") {
		return "# labels = [\"private\"]   # suggested: files under your home may be private; then network calls ask\n"
	}
	return ""
}

// toolHints lists the behaviour hints a tool's annotations claim.
func toolHints(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var a map[string]any
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	var hints []string
	for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
		if v, ok := a[k].(bool); ok {
			hints = append(hints, fmt.Sprintf("%s=%t", k, v))
		}
	}
	return strings.Join(hints, " ")
}

// writeConfigFile writes a config atomically and private (0600, in a 0700
// directory it creates), after checking that mcp-guard can load it.
func writeConfigFile(dst string, data []byte, env config.EnvFunc) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".mcp-guard-init-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if _, err := config.Load(tmp.Name(), env); err != nil {
		return fmt.Errorf("the config written for %s does not load (a bug in init; nothing written): %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string { return hostconfig.TOMLString(s) }

// globQuote escapes the characters a rule's tool glob treats as special, so
// the rule matches exactly this name.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// safeComment is s escaped onto one line, bounded, fit for a TOML comment.
func safeComment(s string, max int) string {
	return safetext.Show(s, max)
}

// showName is a server name from a file the operator may not have written,
// quoted and escaped.
func showName(s string) string {
	return `"` + safetext.Show(s, 64) + `"`
}

// plural is "1 tool", "2 tools".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// listLimits are the default limits with init's --timeout for each server's
// start and listing.
func listLimits(timeout time.Duration) config.Limits {
	l := config.DefaultLimits()
	l.StartTimeout = timeout
	return l
}
