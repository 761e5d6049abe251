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

// Prompts: only those a rule covers are listed, as <server>__<prompt>; an
// allowed get is recorded, then forwarded with the argument bytes recorded,
// and returns the upstream's messages; a get a rule denies, of a hidden or
// unknown name, is refused, recorded and never reaches the upstream.
func TestContent_PromptsGatedRecordedAndForwarded(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("notes", contentScript(t)), contentRules(t))
	h := e.connect(cfg, "2025-11-25")

	want := []string{"notes__secret", "notes__simple-args", "notes__simple-greet"}
	if got := h.promptNames(t); !slices.Equal(got, want) {
		t.Fatalf("host sees prompts %v, want %v (hidden: no rule; sneaky: bidi text refused)", got, want)
	}

	res, err := h.getPrompt(t, "notes__simple-greet", nil)
	if err != nil || promptText(res) != "prompt simple-greet arguments {}" || res.Description != "fake prompt simple-greet" {
		t.Fatalf("simple-greet: %v %+v", err, res)
	}
	res, err = h.getPrompt(t, "notes__simple-args", map[string]string{"who": "Ada"})
	if err != nil || promptText(res) != `prompt simple-args arguments {"who":"Ada"}` {
		t.Fatalf("simple-args for Ada: %v %+v", err, res)
	}
	gets := e.received("notes", "prompts/get")
	if len(gets) != 2 || string(gets[1].Params) != `{"name":"simple-args","arguments":{"who":"Ada"}}` {
		t.Fatalf("upstream received %d prompts/get, last %s", len(gets), gets[len(gets)-1].line)
	}

	for _, tc := range []struct {
		name string
		args map[string]string
		msg  string
	}{
		{"notes__simple-args", map[string]string{"who": "Eve"}, "notes/prompt:simple-args denied by rule 3: only Ada (ledger call"},
		{"notes__secret", nil, "denied by rule 5: not for the model"},
		{"notes__hidden", nil, "not found"},
		{"notes__sneaky", nil, "not found"},
		{"other__x", nil, "not found"},
	} {
		if _, err := h.getPrompt(t, tc.name, tc.args); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("get %s %v: %v; want an error containing %q", tc.name, tc.args, err, tc.msg)
		}
	}
	if n := len(e.received("notes", "prompts/get")); n != 2 {
		t.Fatalf("refused gets reached the upstream: %d prompts/get", n)
	}

	rows := e.callsOfKind(ledger.KindPrompt)
	var got []string
	for _, r := range rows {
		got = append(got, r.Exposed+" "+r.Decision+" "+r.State+" "+string(r.Args))
	}
	wantRows := []string{
		"notes__simple-greet allow done ",
		`notes__simple-args allow done {"who":"Ada"}`,
		`notes__simple-args deny refused {"who":"Eve"}`,
		"notes__secret deny refused ",
		"notes__hidden unknown_prompt refused ",
		"notes__sneaky unknown_prompt refused ",
		"other__x unknown_prompt refused ",
	}
	if !slices.Equal(got, wantRows) {
		t.Fatalf("ledger prompt calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
	if r := rows[4]; r.Server != "notes" || r.Tool != "hidden" || !strings.Contains(r.Reason, "not exposed: no rule matches it") {
		t.Fatalf("hidden prompt's row: %+v", r)
	}
	if r := rows[5]; !strings.Contains(r.Reason, "U+202E") {
		t.Fatalf("refused prompt's row: %+v", r)
	}
	out, code := e.mcpGuard("log", "--kind", "prompt", "--config", cfg)
	if code != 0 || !strings.Contains(out, "notes/prompt:simple-args deny refused rule=3 class=read reason=only Ada") || !strings.Contains(out, "notes/prompt:simple-greet allow done") {
		t.Fatalf("log --kind prompt (exit %d):\n%s", code, out)
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
}

// Resources and templates: listed under mcp-guard://<server>/<uri> only
// when a rule covers them; a read is decided on the URI actually read
// (mapped back to the upstream's), recorded, and forwarded only when
// allowed; a template cannot climb out of the allowed tree; a URI nothing
// exposes is refused and recorded.
func TestContent_ResourcesReadPerRules(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("notes", contentScript(t)), contentRules(t))
	h := e.connect(cfg, "2025-06-18")
	ctx, cancel := ctx20()
	defer cancel()
	lr, err := h.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	sort.Strings(uris)
	if want := []string{"mcp-guard://notes/file:///work/notes.txt", "mcp-guard://notes/file:///work/private/key"}; !slices.Equal(uris, want) {
		t.Fatalf("resources %v, want %v", uris, want)
	}
	lt, err := h.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "mcp-guard://notes/file:///work/{+path}" {
		t.Fatalf("templates: %v %+v", err, lt)
	}

	res, err := h.read(t, "mcp-guard://notes/file:///work/notes.txt")
	if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != "mcp-guard://notes/file:///work/notes.txt" || res.Contents[0].Text != "read file:///work/notes.txt" {
		t.Fatalf("read notes: %v %+v", err, res)
	}
	res, err = h.read(t, "mcp-guard://notes/file:///work/sub/a.txt")
	if err != nil || res.Contents[0].Text != "read file:///work/sub/a.txt" {
		t.Fatalf("read through the template: %v %+v", err, res)
	}
	for _, tc := range []struct{ uri, msg string }{
		{"mcp-guard://notes/file:///work/private/key", "denied by rule 7: private"},
		{"mcp-guard://notes/file:///work/private/../private/key", "denied by rule 7: private"},
		{"mcp-guard://notes/file:///work/../etc/passwd", "no rule allows this URI"},
		{"mcp-guard://notes/file:///work/%2e%2e/etc/passwd", "no rule allows this URI"},
		{"mcp-guard://notes/test://other", "not found"},
		{"mcp-guard://notes/test://x/1", "not found"},
		{"mcp-guard://notes/file:///elsewhere", "not found"},
		{"file:///work/notes.txt", "not found"},
		{"mcp-guard://nobody/file:///work/notes.txt", "not found"},
	} {
		if _, err := h.read(t, tc.uri); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("read %s: %v; want an error containing %q", tc.uri, err, tc.msg)
		}
	}
	var reads []string
	for _, m := range e.received("notes", "resources/read") {
		reads = append(reads, string(m.Params))
	}
	if want := []string{`{"uri":"file:///work/notes.txt"}`, `{"uri":"file:///work/sub/a.txt"}`}; !slices.Equal(reads, want) {
		t.Fatalf("upstream received reads %v, want %v", reads, want)
	}
	rows := e.callsOfKind(ledger.KindResource)
	var got []string
	for _, r := range rows {
		got = append(got, r.Server+"|"+r.Tool+" "+r.Decision+" "+r.State)
	}
	want := []string{
		"notes|file:///work/notes.txt allow done",
		"notes|file:///work/sub/a.txt allow done",
		"notes|file:///work/private/key deny refused",
		"notes|file:///work/private/../private/key deny refused",
		"notes|file:///work/../etc/passwd deny refused",
		"notes|file:///work/%2e%2e/etc/passwd deny refused",
		"notes|test://other unknown_resource refused",
		"notes|test://x/1 unknown_resource refused",
		"notes|file:///elsewhere unknown_resource refused",
		"| unknown_resource refused",
		"| unknown_resource refused",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ledger resource calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if string(rows[0].Args) != `{"uri":"file:///work/notes.txt"}` || rows[0].Exposed != "mcp-guard://notes/file:///work/notes.txt" || rows[0].ResultDigest == "" {
		t.Fatalf("allowed read's row: %+v", rows[0])
	}
	if !strings.Contains(rows[6].Reason, "not exposed: no rule matches it") {
		t.Fatalf("hidden resource's row: %+v", rows[6])
	}
	out, code := e.mcpGuard("log", "--kind", "resource", "--config", cfg)
	if code != 0 || !strings.Contains(out, "notes/resource:file:///work/private/key deny refused rule=7 class=read reason=private") {
		t.Fatalf("log --kind resource (exit %d):\n%s", code, out)
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
}

// A prompt or resource whose definition changes is withdrawn until the
// operator accepts the diff; a get or read of it meanwhile is refused and
// reaches nothing.
func TestContent_RugPullWithdrawsUntilAccepted(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("notes", contentScript(t)), contentRules(t))
	h := e.connect(cfg, "2025-11-25")
	if _, err := h.getPrompt(t, "notes__simple-greet", nil); err != nil {
		t.Fatal(err)
	}
	const notes = "mcp-guard://notes/file:///work/notes.txt"
	if _, err := h.read(t, notes); err != nil {
		t.Fatal(err)
	}
	h.call(t, "notes__pull", map[string]any{})
	eventually(t, "the changed prompt withdrawn", func() bool { return !slices.Contains(h.promptNames(t), "notes__simple-greet") })
	if !slices.Contains(h.promptNames(t), "notes__simple-args") {
		t.Fatal("an unchanged prompt was withdrawn too")
	}
	if _, err := h.getPrompt(t, "notes__simple-greet", nil); err == nil {
		t.Fatal("the withdrawn prompt was got")
	}
	if _, err := h.read(t, notes); err == nil || !strings.Contains(err.Error(), "not exposed: pin changed") {
		t.Fatalf("read of the changed resource (not through its template either): %v", err)
	}
	if n, m := len(e.received("notes", "prompts/get")), len(e.received("notes", "resources/read")); n != 1 || m != 1 {
		t.Fatalf("withdrawn items reached the upstream: %d gets, %d reads", n, m)
	}
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
	if res, err := h.getPrompt(t, "notes__simple-greet", nil); err != nil || promptText(res) == "" {
		t.Fatalf("get after accepting: %v", err)
	}
	eventually(t, "the accepted resource back", func() bool { _, err := h.read(t, notes); return err == nil })
}
