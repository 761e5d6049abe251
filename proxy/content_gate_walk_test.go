package proxy

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// callsOfKind are the ledger's calls of one kind, oldest first.
func (m *memProxy) callsOfKind(t *testing.T, kind string) []ledger.CallRow {
	t.Helper()
	rows, err := m.led.Calls(context.Background(), ledger.CallFilter{Kind: kind, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rows)
	return rows
}

// promptText is a got prompt's text.
func promptText(r *sdk.GetPromptResult) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if tc, ok := m.Content.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Prompts: only those a rule covers are listed, as <server>__<prompt>; an
// allowed get is recorded, then forwarded with the argument bytes recorded,
// and returns the upstream's messages; a get a rule denies, of a hidden or
// unknown name, is refused, recorded and never reaches the upstream.
func TestWalk_PromptsGatedRecordedAndForwarded(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		s := startSDKHost(t, p.Proxy, nil)
		ctx := context.Background()
		if names, want := sdkPromptNames(t, s), []string{"notes__secret", "notes__simple-args", "notes__simple-greet"}; !slices.Equal(names, want) {
			t.Fatalf("host sees prompts %v, want %v (hidden: no rule; sneaky: bidi text refused)", names, want)
		}
		get := func(name string, args map[string]string) (*sdk.GetPromptResult, error) {
			return s.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
		}
		res, err := get("notes__simple-greet", nil)
		if err != nil || promptText(res) != "prompt simple-greet arguments {}" || res.Description != "fake prompt simple-greet" {
			t.Fatalf("simple-greet: %v %+v", err, res)
		}
		res, err = get("notes__simple-args", map[string]string{"who": "Ada"})
		if err != nil || promptText(res) != `prompt simple-args arguments {"who":"Ada"}` {
			t.Fatalf("simple-args for Ada: %v %+v", err, res)
		}
		gets := p.received(t, "notes", "prompts/get")
		if len(gets) != 2 || !strings.Contains(gets[1], `"params":{"name":"simple-args","arguments":{"who":"Ada"}}`) {
			t.Fatalf("upstream received %d prompts/get: %v", len(gets), gets)
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
			if _, err := get(tc.name, tc.args); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("get %s %v: %v; want an error containing %q", tc.name, tc.args, err, tc.msg)
			}
		}
		if n := len(p.received(t, "notes", "prompts/get")); n != 2 {
			t.Fatalf("refused gets reached the upstream: %d prompts/get", n)
		}
		rows := p.callsOfKind(t, ledger.KindPrompt)
		var got []string
		for _, r := range rows {
			got = append(got, r.Exposed+" "+r.Decision+" "+r.State+" "+string(r.Args))
		}
		want := []string{
			"notes__simple-greet allow done ",
			`notes__simple-args allow done {"who":"Ada"}`,
			`notes__simple-args deny refused {"who":"Eve"}`,
			"notes__secret deny refused ",
			"notes__hidden unknown_prompt refused ",
			"notes__sneaky unknown_prompt refused ",
			"other__x unknown_prompt refused ",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ledger prompt calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if r := rows[4]; r.Server != "notes" || r.Tool != "hidden" || !strings.Contains(r.Reason, "not exposed: no rule matches it") {
			t.Fatalf("hidden prompt's row: %+v", r)
		}
		if r := rows[5]; !strings.Contains(r.Reason, "U+202E") {
			t.Fatalf("refused prompt's row: %+v", r)
		}
	})
}

// Resources and templates: listed under mcp-guard://<server>/<uri> only
// when a rule covers them; a read is decided on the URI actually read
// (mapped back to the upstream's), recorded, and forwarded only when
// allowed; a template cannot climb out of the allowed tree; a URI nothing
// exposes is refused and recorded.
func TestWalk_ResourcesReadPerRules(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		s := startSDKHostAt(t, p.Proxy, "2025-06-18", nil)
		ctx := context.Background()
		lr, err := s.ListResources(ctx, nil)
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
		lt, err := s.ListResourceTemplates(ctx, nil)
		if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "mcp-guard://notes/file:///work/{+path}" {
			t.Fatalf("templates: %v %+v", err, lt)
		}
		read := func(uri string) (*sdk.ReadResourceResult, error) {
			return s.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		}
		res, err := read("mcp-guard://notes/file:///work/notes.txt")
		if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != "mcp-guard://notes/file:///work/notes.txt" || res.Contents[0].Text != "read file:///work/notes.txt" {
			t.Fatalf("read notes: %v %+v", err, res)
		}
		res, err = read("mcp-guard://notes/file:///work/sub/a.txt")
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
			if _, err := read(tc.uri); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("read %s: %v; want an error containing %q", tc.uri, err, tc.msg)
			}
		}
		var reads []string
		for _, l := range p.received(t, "notes", "resources/read") {
			reads = append(reads, memberOf(l, "params"))
		}
		if want := []string{`{"uri":"file:///work/notes.txt"}`, `{"uri":"file:///work/sub/a.txt"}`}; !slices.Equal(reads, want) {
			t.Fatalf("upstream received reads %v, want %v", reads, want)
		}
		rows := p.callsOfKind(t, ledger.KindResource)
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
	})
}

// A prompt or resource whose definition changes is withdrawn until the
// operator accepts the new one; a get or read of it meanwhile is refused
// and reaches nothing; accepted, it is shown and served again.
func TestWalk_ContentRugPullWithdrawsUntilAccepted(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		s := startSDKHost(t, p.Proxy, nil)
		ctx := context.Background()
		prompts := func() []string { return sdkPromptNames(t, s) }
		get := func() error {
			_, err := s.GetPrompt(ctx, &sdk.GetPromptParams{Name: "notes__simple-greet"})
			return err
		}
		const notes = "mcp-guard://notes/file:///work/notes.txt"
		read := func() error {
			_, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: notes})
			return err
		}
		if err := get(); err != nil {
			t.Fatal(err)
		}
		if err := read(); err != nil {
			t.Fatal(err)
		}
		sdkCall(t, s, "notes__pull", map[string]any{})
		eventually(t, "the changed prompt withdrawn", func() bool { return !slices.Contains(prompts(), "notes__simple-greet") })
		if !slices.Contains(prompts(), "notes__simple-args") {
			t.Fatal("an unchanged prompt was withdrawn too")
		}
		if err := get(); err == nil {
			t.Fatal("the withdrawn prompt was got")
		}
		if err := read(); err == nil || !strings.Contains(err.Error(), "not exposed: pin changed") {
			t.Fatalf("read of the changed resource (not through its template either): %v", err)
		}
		if n, m := len(p.received(t, "notes", "prompts/get")), len(p.received(t, "notes", "resources/read")); n != 1 || m != 1 {
			t.Fatalf("withdrawn items reached the upstream: %d gets, %d reads", n, m)
		}
		for _, name := range []string{"prompt:simple-greet", "resource:file:///work/notes.txt"} {
			pn, err := p.led.Pin(ctx, "notes", name)
			if err != nil || pn.PendingDigest == "" {
				t.Fatalf("the pin of %s: %v %+v; want a definition waiting", name, err, pn)
			}
			if err := p.led.AcceptPin(ctx, "notes", name, pn.PendingDigest); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "the accepted prompt back", func() bool { return slices.Contains(prompts(), "notes__simple-greet") })
		if err := get(); err != nil {
			t.Fatalf("get after accepting: %v", err)
		}
		eventually(t, "the accepted resource back", func() bool { return read() == nil })
	})
}
