package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// contentScript is a fake upstream with prompts, resources and templates,
// and contentRules the rules over it (testdata/content, which the proxy
// package's content walks share).
func contentScript(t testing.TB) string { return readTestdata(t, "../../testdata/content/script.json") }

func contentRules(t testing.TB) string { return readTestdata(t, "../../testdata/content/rules.toml") }

// readTestdata is a file of the module's testdata.
func readTestdata(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// received returns the requests of one method the fake upstream received.
func (e *env) received(name, method string) []rpcMsg {
	var out []rpcMsg
	for _, l := range e.record(name) {
		var m rpcMsg
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == method {
			m.line = l
			out = append(out, m)
		}
	}
	return out
}

func ctx20() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 20*time.Second)
}

func (h *host) promptNames(t *testing.T) []string {
	t.Helper()
	ctx, cancel := ctx20()
	defer cancel()
	res, err := h.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func (h *host) getPrompt(t *testing.T, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	t.Helper()
	ctx, cancel := ctx20()
	defer cancel()
	return h.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
}

func (h *host) read(t *testing.T, uri string) (*mcp.ReadResourceResult, error) {
	t.Helper()
	ctx, cancel := ctx20()
	defer cancel()
	return h.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

func promptText(r *mcp.GetPromptResult) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// callsOfKind lists the ledger's calls of one kind, oldest first.
func (e *env) callsOfKind(kind string) []ledger.CallRow {
	e.t.Helper()
	return callsOfKind(e.t, e.openLedger(), kind)
}

func callsOfKind(t testing.TB, led *ledger.Ledger, kind string) []ledger.CallRow {
	t.Helper()
	rows, err := led.Calls(context.Background(), ledger.CallFilter{Kind: kind, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rows)
	return rows
}

// The CLI shows what serve decided on prompts and resources (the proxy
// package's walks show the deciding): log --kind names each decision with
// its rule, verify passes, and tools lists every prompt, resource and
// template with its state and rule, or why it is hidden; pin diff and pin
// accept name a prompt or resource as notes/prompt:NAME or
// notes/resource:URI.
func TestContent_CLIShowsPromptsAndResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("notes", contentScript(t)), contentRules(t))
	h := e.connect(cfg, "2025-11-25")
	if _, err := h.getPrompt(t, "notes__simple-greet", nil); err != nil {
		t.Fatalf("get simple-greet: %v", err)
	}
	if _, err := h.getPrompt(t, "notes__simple-args", map[string]string{"who": "Eve"}); err == nil {
		t.Fatal("a denied get was allowed")
	}
	if _, err := h.read(t, "mcp-guard://notes/file:///work/private/key"); err == nil {
		t.Fatal("a denied read was allowed")
	}
	out, code := e.mcpGuard("log", "--kind", "prompt", "--config", cfg)
	if code != 0 || !strings.Contains(out, "notes/prompt:simple-args deny refused rule=3 class=read reason=only Ada") || !strings.Contains(out, "notes/prompt:simple-greet allow done") {
		t.Fatalf("log --kind prompt (exit %d):\n%s", code, out)
	}
	out, code = e.mcpGuard("log", "--kind", "resource", "--config", cfg)
	if code != 0 || !strings.Contains(out, "notes/resource:file:///work/private/key deny refused rule=7 class=read reason=private") {
		t.Fatalf("log --kind resource (exit %d):\n%s", code, out)
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
	out, code = e.mcpGuard("tools", "--config", cfg)
	for _, want := range []string{
		`notes\s+prompt\s+simple-greet\s+notes__simple-greet\s+pinned\s+allow\s+4`,
		`notes\s+prompt\s+hidden\s+hidden: no rule matches it`,
		`notes\s+prompt\s+sneaky\s+hidden: refused: description has U\+202E`,
		`notes\s+resource\s+file:///work/private/key\s+mcp-guard://notes/file:///work/private/key\s+pinned\s+deny\s+7`,
		`notes\s+template\s+test://x/\{id\}\s+hidden: no rule matches it`,
		`notes\s+prompt:simple-greet\s+hidden: refused: a tool name may not start with prompt:`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("tools (exit %d) lacks %s:\n%s", code, want, out)
		}
	}

	// A changed prompt and resource: pin diff shows each change, and pin
	// accept with the digest it showed puts each back before the host.
	h.call(t, "notes__pull", map[string]any{})
	eventually(t, "the changed prompt withdrawn", func() bool { return !slices.Contains(h.promptNames(t), "notes__simple-greet") })
	for _, target := range []string{"notes/prompt:simple-greet", "notes/resource:file:///work/notes.txt"} {
		out, code := e.mcpGuard("pin", "diff", target, "--config", cfg)
		if code != 0 || !strings.Contains(out, target+": changed") || !strings.Contains(out, "+ ") {
			t.Fatalf("pin diff %s (exit %d):\n%s", target, code, out)
		}
		if out, code := e.mcpGuard("pin", "accept", target, "--config", cfg, "--digest", digestIn(t, out)); code != 0 {
			t.Fatalf("accept %s (exit %d):\n%s", target, code, out)
		}
	}
	eventually(t, "the accepted prompt back", func() bool { return slices.Contains(h.promptNames(t), "notes__simple-greet") })
	eventually(t, "the accepted resource back", func() bool {
		_, err := h.read(t, "mcp-guard://notes/file:///work/notes.txt")
		return err == nil
	})
}
