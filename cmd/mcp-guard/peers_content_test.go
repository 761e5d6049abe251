package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// recordedNpmServer is npmServer with everything mcp-guard writes to the
// server's stdin also appended to <dir>/<name>.record (by tee), so a test
// can show what reached the real server.
func (e *env) recordedNpmServer(t *testing.T, name, script string, args ...string) string {
	t.Helper()
	argv := append([]string{"node", peerPath(t, script)}, args...)
	for i, a := range argv {
		argv[i] = "'" + a + "'"
	}
	sh := fmt.Sprintf("tee -a '%s' | exec %s", e.recordPath(name), strings.Join(argv, " "))
	return fmt.Sprintf("[[server]]\nname = %q\ncommand = [\"sh\", \"-c\", %q]\npass_env = [\"PATH\", \"HOME\"]\n", name, sh)
}

// direct connects the go-sdk client to server-everything itself.
func directEverything(t *testing.T) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	ctx, cancel := ctx20()
	defer cancel()
	cmd := exec.Command("node", peerPath(t, everythingJS), "stdio")
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to server-everything: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func messagesJSON(t *testing.T, r *mcp.GetPromptResult) string {
	t.Helper()
	b, err := json.Marshal(r.Messages)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const everythingContentRules = `
[[rule]]
server = "every"
tool = "toggle-subscriber-updates"
class = "read"
action = "allow"

[[rule]]
server = "every"
prompt = "simple-prompt"
action = "allow"

[[rule]]
server = "every"
prompt = "args-prompt"
action = "allow"
when = { "/city" = { one_of = ["Paris", "Oslo"] } }

[[rule]]
server = "every"
prompt = "args-prompt"
action = "deny"
reason = "only Paris and Oslo"

[[rule]]
server = "every"
prompt = "completable-prompt"
action = "deny"
reason = "no promotions"

[[rule]]
server = "every"
resource = "demo://resource/static/document/features.md"
action = "allow"

[[rule]]
server = "every"
resource = "demo://resource/static/document/instructions.md"
action = "allow"

[[rule]]
server = "every"
resource = "demo://resource/dynamic/text/*"
action = "allow"

[[rule]]
server = "every"
resource = "demo://resource/dynamic/blob/*"
action = "deny"
reason = "no blobs"
`

// The real server-everything's prompts and resources behind mcp-guard:
// listed namespaced only when a rule covers them; an allowed get returns
// what the server returns directly; denied gets and reads are refused and
// never reach the server; a subscription is forwarded and the server's
// resources/updated reaches the subscribing host under the host URI.
func TestPeers_ServerEverythingPromptsAndResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.recordedNpmServer(t, "every", everythingJS, "stdio"), everythingContentRules)
	h := e.connect(cfg, "2025-11-25")
	direct := directEverything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Prompts: resource-prompt has no rule, so it is not listed.
	if got, want := h.promptNames(t), []string{"every__args-prompt", "every__completable-prompt", "every__simple-prompt"}; !slices.Equal(got, want) {
		t.Fatalf("host sees prompts %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
	}{{"simple-prompt", nil}, {"args-prompt", map[string]string{"city": "Paris", "state": "IDF"}}} {
		via, err := h.getPrompt(t, "every__"+tc.name, tc.args)
		if err != nil {
			t.Fatalf("get %s through mcp-guard: %v", tc.name, err)
		}
		want, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args})
		if err != nil {
			t.Fatalf("get %s directly: %v", tc.name, err)
		}
		if messagesJSON(t, via) != messagesJSON(t, want) || len(via.Messages) == 0 {
			t.Fatalf("%s through mcp-guard:\n%s\ndirectly:\n%s", tc.name, messagesJSON(t, via), messagesJSON(t, want))
		}
	}
	if res, _ := h.getPrompt(t, "every__args-prompt", map[string]string{"city": "Paris"}); res == nil || promptText(res) != "What's weather in Paris?" {
		t.Fatalf("args-prompt: %+v", res)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		msg  string
	}{
		{"every__args-prompt", map[string]string{"city": "Rome"}, "denied by rule 4: only Paris and Oslo"},
		{"every__completable-prompt", map[string]string{"department": "Sales", "name": "Eve"}, "denied by rule 5: no promotions"},
		{"every__resource-prompt", map[string]string{"resourceType": "Text", "resourceId": "1"}, "not found"},
	} {
		if _, err := h.getPrompt(t, tc.name, tc.args); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("get %s: %v; want an error containing %q", tc.name, err, tc.msg)
		}
	}
	var gets []string
	for _, m := range e.received("every", "prompts/get") {
		gets = append(gets, string(m.Params))
	}
	if want := []string{`{"name":"simple-prompt"}`, `{"name":"args-prompt","arguments":{"city":"Paris","state":"IDF"}}`, `{"name":"args-prompt","arguments":{"city":"Paris"}}`}; !slices.Equal(gets, want) {
		t.Fatalf("server-everything received prompts/get %v, want %v", gets, want)
	}

	// Resources: only the documents the rules name, and both templates
	// (the blob one is listed, its reads denied).
	lr, err := h.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	sort.Strings(uris)
	const features = "mcp-guard://every/demo://resource/static/document/features.md"
	if want := []string{features, "mcp-guard://every/demo://resource/static/document/instructions.md"}; !slices.Equal(uris, want) {
		t.Fatalf("resources %v, want %v", uris, want)
	}
	lt, err := h.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tmpls []string
	for _, tm := range lt.ResourceTemplates {
		tmpls = append(tmpls, tm.URITemplate)
	}
	sort.Strings(tmpls)
	if want := []string{"mcp-guard://every/demo://resource/dynamic/blob/{resourceId}", "mcp-guard://every/demo://resource/dynamic/text/{resourceId}"}; !slices.Equal(tmpls, want) {
		t.Fatalf("templates %v, want %v", tmpls, want)
	}
	via, err := h.read(t, features)
	if err != nil {
		t.Fatal(err)
	}
	want, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/features.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(via.Contents) != 1 || via.Contents[0].Text != want.Contents[0].Text || via.Contents[0].URI != features || via.Contents[0].MIMEType != "text/markdown" {
		t.Fatalf("features.md through mcp-guard differs from the direct read: %+v", via.Contents)
	}
	if res, err := h.read(t, "mcp-guard://every/demo://resource/dynamic/text/3"); err != nil || !strings.HasPrefix(res.Contents[0].Text, "Resource 3: This is a plaintext resource") {
		t.Fatalf("dynamic text resource: %v %+v", err, res)
	}
	for _, tc := range []struct{ uri, msg string }{
		{"mcp-guard://every/demo://resource/dynamic/blob/3", "denied by rule 9: no blobs"},
		{"mcp-guard://every/demo://resource/static/document/architecture.md", "not found"},
		{"demo://resource/static/document/features.md", "not found"},
	} {
		if _, err := h.read(t, tc.uri); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("read %s: %v; want an error containing %q", tc.uri, err, tc.msg)
		}
	}
	var reads []string
	for _, m := range e.received("every", "resources/read") {
		reads = append(reads, string(m.Params))
	}
	if want := []string{`{"uri":"demo://resource/static/document/features.md"}`, `{"uri":"demo://resource/dynamic/text/3"}`}; !slices.Equal(reads, want) {
		t.Fatalf("server-everything received reads %v, want %v", reads, want)
	}

	// A subscription, and the server's simulated update for it.
	if err := h.Subscribe(ctx, &mcp.SubscribeParams{URI: "mcp-guard://every/demo://resource/dynamic/blob/1"}); err == nil {
		t.Fatal("a subscription to a denied URI was allowed")
	}
	if err := h.Subscribe(ctx, &mcp.SubscribeParams{URI: features}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	// tee records what it passes on, so the line can reach the file after
	// the server's answer reached the host.
	var subs []string
	eventually(t, "server-everything's subscription recorded", func() bool {
		subs = nil
		for _, m := range e.received("every", "resources/subscribe") {
			subs = append(subs, string(m.Params))
		}
		return len(subs) > 0
	})
	if !slices.Equal(subs, []string{`{"uri":"demo://resource/static/document/features.md"}`}) {
		t.Fatalf("server-everything received subscriptions %v", subs)
	}
	if res, err := h.call(t, "every__toggle-subscriber-updates", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("toggle-subscriber-updates: %v %+v", err, res)
	}
	eventually(t, "the server's update relayed to the subscriber", func() bool { return slices.Contains(h.updatesSeen(), features) })
	for _, u := range h.updatesSeen() {
		if u != features {
			t.Fatalf("host received an update for %s, which it did not subscribe to", u)
		}
	}
	h.call(t, "every__toggle-subscriber-updates", map[string]any{}) // stop the server's timer

	kinds := map[string][]string{}
	for _, k := range []string{ledger.KindPrompt, ledger.KindResource} {
		for _, r := range e.callsOfKind(k) {
			kinds[k] = append(kinds[k], r.Tool+" "+r.Decision+" "+r.State)
		}
	}
	if want := []string{"simple-prompt allow done", "args-prompt allow done", "args-prompt allow done", "args-prompt deny refused", "completable-prompt deny refused", "resource-prompt unknown_prompt refused"}; !slices.Equal(kinds[ledger.KindPrompt], want) {
		t.Fatalf("ledger prompt calls %v, want %v", kinds[ledger.KindPrompt], want)
	}
	if want := []string{"demo://resource/static/document/features.md allow done", "demo://resource/dynamic/text/3 allow done", "demo://resource/dynamic/blob/3 deny refused",
		"demo://resource/static/document/architecture.md unknown_resource refused", " unknown_resource refused"}; !slices.Equal(kinds[ledger.KindResource], want) {
		t.Fatalf("ledger resource calls %v, want %v", kinds[ledger.KindResource], want)
	}
	if out, code := e.mcpGuard("verify", "--ledger", filepath.Join(e.state, "ledger.db")); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
}
