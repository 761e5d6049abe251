package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// go-sdk 1.8 clients at each protocol revision (issue 20, the last "How it
// is shown" item): over the stdio and the HTTP host, in front of a legacy
// upstream (npm server-everything over stdio) and a modern one
// (testdata/modernup, which mcp-guard speaks 2026-07-28 to), the tools
// listed and a few calls' results are the same through mcp-guard as
// direct to the same server with the same client at the same requested
// revision, once the `<server>__` name prefix and the
// `mcp-guard://<server>/` URI prefix are undone.
//
// Permitted differences, each undone where named, and nothing else:
//   - tools that can only run as tasks are not listed through mcp-guard,
//     which offers no tasks (G2; gosdkRun drops them from the direct list);
//   - a 2026-07-28 client in front of the legacy server: direct, the server
//     has no server/discover and the client falls back to 2025-11-25;
//     through mcp-guard the client's session is 2026-07-28, whose results
//     carry `resultType` and, in `_meta`, the serverInfo of the server the
//     client talks to: mcp-guard. The test requires both, naming
//     mcp-guard, and then the rest equal (gosdkEnvelope);
//   - a 2026-07-28 client's tools/call, prompts/get or completion/complete
//     in front of the modern server: its serverInfo names mcp-guard, not
//     the server (mcp-guard answers each itself, the server's bytes in its
//     own envelope); the test requires that, and the rest equal;
//   - a 2026-07-28 client's resources/read: mcp-guard writes the envelope,
//     so its serverInfo names mcp-guard and its cacheScope is "private" (the
//     modern server says "public"; mcp-guard decides each read per host,
//     so a host should not share what it got); the test requires both, and
//     the rest equal (ttlMs, 0 on both sides, is left out with cacheScope).

// gosdkVersions are the revisions the client asks for.
var gosdkVersions = []string{"2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"}

// gosdkTaskOnly are the tools server-everything lists with
// `execution.taskSupport: "required"` (go-sdk's Tool has no field for it;
// TestFidelity_Matrix reads it from the raw list).
var gosdkTaskOnly = []string{"simulate-research-query"}

// gosdkCall is a request made both ways: a tools/call (kind ""), a
// prompts/get ("prompt"), a resources/read ("read", of the URI name) or a
// completion/complete of a prompt's argument ("complete", args "arg" and
// "value").
type gosdkCall struct {
	what, kind, name string
	args             map[string]any
}

// gosdkUpstream is one upstream: the [[server]] block for mcp-guard and the
// command that runs it directly.
type gosdkUpstream struct {
	name   string
	modern bool // the server speaks 2026-07-28 (direct too)
	block  func(t *testing.T) string
	direct func(t *testing.T) *exec.Cmd
	calls  []gosdkCall
}

func gosdkUpstreams() []gosdkUpstream {
	return []gosdkUpstream{
		{"legacy server-everything (stdio)", false,
			func(t *testing.T) string { return npmServer(t, matrixServer, everythingJS, "stdio") },
			func(t *testing.T) *exec.Cmd {
				cmd := exec.Command("node", peerPath(t, everythingJS), "stdio")
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
				return cmd
			},
			[]gosdkCall{
				{"echo", "", "echo", map[string]any{"message": "hello <guard> & \"co\" é"}},
				{"structured content", "", "get-structured-content", map[string]any{"location": "Chicago"}},
				{"a sum", "", "get-sum", map[string]any{"a": 1, "b": 2.5}},
				{"an error the tool throws", "", "get-resource-reference", map[string]any{"resourceId": 0}},
				{"a prompt", "prompt", "args-prompt", map[string]any{"city": "Paris", "state": "<b>"}},
				{"a completion", "complete", "completable-prompt", map[string]any{"arg": "department", "value": "S"}},
				{"a read", "read", "demo://resource/static/document/architecture.md", nil},
			}},
		{"modern modernup (stdio, protocol 2026-07-28)", true,
			func(t *testing.T) string {
				return fmt.Sprintf("[[server]]\nname = %q\ncommand = [%q, \"--more\"]\nprotocol = \"2026-07-28\"\n", matrixServer, bins.modern)
			},
			func(t *testing.T) *exec.Cmd { return exec.Command(bins.modern, "--more") },
			[]gosdkCall{
				{"echo", "", "echo", map[string]any{"q": "hello <guard> & \"co\" é"}},
				{"structured content", "", "weather", map[string]any{"city": "Chicago"}},
				{"an isError result", "", "fail", map[string]any{}},
				{"an error the handler returns", "", "boom", map[string]any{}},
				{"a prompt", "prompt", "greet", map[string]any{"name": "Ada"}},
				{"a completion", "complete", "greet", map[string]any{"arg": "name", "value": "A"}},
				{"a read", "read", "test://hello", nil},
			}},
	}
}

// gosdkClient is a go-sdk client that declares no capabilities, as
// mcp-guard declares none to an upstream that is not allowed to ask the
// host anything (server-everything lists tools by the client's
// capabilities).
func gosdkClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "fidelity-host", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
}

// gosdkConnect connects a fresh client over t at version.
func gosdkConnect(tb testing.TB, what string, tr mcp.Transport, version string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := gosdkClient().Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("%s: connect at %s: %w", what, version, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, nil
}

// gosdkOutcome is what a session answered, as JSON: the tools and prompts
// listed (names unprefixed) and each call's result or error.
type gosdkOutcome struct {
	negotiated     string
	tools, prompts string
	calls          []string
}

func gosdkRun(t *testing.T, s *mcp.ClientSession, prefix string, calls []gosdkCall) gosdkOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := gosdkOutcome{negotiated: s.InitializeResult().ProtocolVersion}
	var tools []*mcp.Tool
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		name, ok := strings.CutPrefix(tool.Name, prefix)
		if !ok {
			t.Fatalf("tool %q listed without the prefix %q", tool.Name, prefix)
		}
		tool.Name = name
		if prefix == "" && slices.Contains(gosdkTaskOnly, name) {
			continue // not offered through mcp-guard: it offers no tasks
		}
		tools = append(tools, tool)
	}
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	out.tools = string(b)
	var prompts []*mcp.Prompt
	for p, err := range s.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		name, ok := strings.CutPrefix(p.Name, prefix)
		if !ok {
			t.Fatalf("prompt %q listed without the prefix %q", p.Name, prefix)
		}
		p.Name = name
		prompts = append(prompts, p)
	}
	if b, err = json.Marshal(prompts); err != nil {
		t.Fatal(err)
	}
	out.prompts = string(b)
	for _, c := range calls {
		var res any
		var err error
		switch c.kind {
		case "":
			res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: prefix + c.name, Arguments: c.args})
		case "prompt":
			args := map[string]string{}
			for k, v := range c.args {
				args[k] = v.(string)
			}
			res, err = s.GetPrompt(ctx, &mcp.GetPromptParams{Name: prefix + c.name, Arguments: args})
		case "read":
			uri := c.name
			if prefix != "" {
				uri = "mcp-guard://" + matrixServer + "/" + uri
			}
			res, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		case "complete":
			res, err = s.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prefix + c.name},
				Argument: mcp.CompleteParamsArgument{Name: c.args["arg"].(string), Value: c.args["value"].(string)}})
		}
		if err != nil {
			out.calls = append(out.calls, "error: "+err.Error())
			continue
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if prefix != "" { // the URI prefix undone
			b = bytes.ReplaceAll(b, []byte(`"mcp-guard://`+matrixServer+`/`), []byte(`"`))
		}
		out.calls = append(out.calls, string(b))
	}
	return out
}

func TestFidelity_GoSDKVersions(t *testing.T) {
	t.Parallel()
	const token = "tok-modern-0123456789abcdef"
	for _, up := range gosdkUpstreams() {
		t.Run(up.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.config(up.block(t), matrixRules)
			endpoint := e.modernHTTPServe(cfg)
			hosts := []struct {
				name      string
				transport func() mcp.Transport
			}{
				{"stdio host", func() mcp.Transport {
					return e.serveTransport(&lockedBuffer{}, "serve", "--config", cfg)
				}},
				{"HTTP host", func() mcp.Transport {
					return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
				}},
			}
			for _, v := range gosdkVersions {
				direct, err := gosdkConnect(t, "direct", &mcp.CommandTransport{Command: up.direct(t), TerminateDuration: 5 * time.Second}, v)
				if err != nil {
					t.Fatal(err)
				}
				want := gosdkRun(t, direct, "", up.calls)
				// The legacy server has no 2026-07-28: direct, a client
				// asking for it falls back to 2025-11-25.
				split := !up.modern && v == modernVersion
				if wantV := map[bool]string{false: v, true: "2025-11-25"}[split]; want.negotiated != wantV {
					t.Fatalf("direct at %s negotiated %s, want %s", v, want.negotiated, wantV)
				}
				for _, h := range hosts {
					t.Run(h.name+"/"+v, func(t *testing.T) {
						s, err := gosdkConnect(t, "through mcp-guard", h.transport(), v)
						if err != nil {
							t.Fatal(err)
						}
						got := gosdkRun(t, s, matrixServer+"__", up.calls)
						if got.negotiated != v {
							t.Fatalf("through mcp-guard at %s negotiated %s", v, got.negotiated)
						}
						want := want
						want.calls = slices.Clone(want.calls)
						for i, c := range up.calls {
							switch { // compared member for member, in one order
							case split:
								got.calls[i] = gosdkEnvelope(t, got.calls[i])
								want.calls[i] = gosdkCanonical(t, want.calls[i])
							case up.modern && v == modernVersion && c.kind != "read":
								got.calls[i] = gosdkEnvelope(t, got.calls[i])
								want.calls[i] = gosdkWithout(t, want.calls[i], "modernup")
							}
							if v == modernVersion && c.kind == "read" {
								got.calls[i] = gosdkUncached(t, got.calls[i], "private")
								if up.modern {
									want.calls[i] = gosdkUncached(t, gosdkWithout(t, want.calls[i], "modernup"), "public")
									got.calls[i] = gosdkEnvelope(t, got.calls[i])
								} else {
									want.calls[i] = gosdkUncached(t, want.calls[i], "")
								}
							}
						}
						if got.tools != want.tools {
							t.Errorf("tools/list differs:\ndirect:  %s\nthrough: %s", want.tools, got.tools)
						}
						if got.prompts != want.prompts {
							t.Errorf("prompts/list differs:\ndirect:  %s\nthrough: %s", want.prompts, got.prompts)
						}
						for i, c := range up.calls {
							if got.calls[i] != want.calls[i] {
								t.Errorf("%s (%s) differs:\ndirect:  %s\nthrough: %s", c.what, c.name, want.calls[i], got.calls[i])
							}
						}
					})
				}
			}
		})
	}
}

// gosdkEnvelope is res, a result mcp-guard answered a 2026-07-28 session
// with, without what that revision adds to a result: resultType "complete"
// and the serverInfo in _meta, which must name mcp-guard (the server of
// the client's session).
func gosdkEnvelope(t *testing.T, res string) string {
	t.Helper()
	return gosdkWithout(t, res, "mcp-guard")
}

// gosdkWithout is res, a 2026-07-28 result, without resultType "complete"
// and its serverInfo, which must name who.
func gosdkWithout(t *testing.T, res, who string) string {
	t.Helper()
	if strings.HasPrefix(res, "error: ") {
		return res
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res), &m); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	meta, _ := m["_meta"].(map[string]any)
	info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
	if m["resultType"] != "complete" || info["name"] != who {
		t.Fatalf("a 2026-07-28 result without resultType complete and %s's serverInfo: %s", who, res)
	}
	delete(m, "resultType")
	delete(meta, "io.modelcontextprotocol/serverInfo")
	if len(meta) == 0 {
		delete(m, "_meta")
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gosdkCanonical is res with its members in json.Marshal's order.
func gosdkCanonical(t *testing.T, res string) string {
	t.Helper()
	var v any
	if strings.HasPrefix(res, "error: ") || json.Unmarshal([]byte(res), &v) != nil {
		return res
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gosdkUncached is res, a resources/read result, without its cacheScope,
// which must be scope, and ttlMs.
func gosdkUncached(t *testing.T, res, scope string) string {
	t.Helper()
	var m map[string]any
	if strings.HasPrefix(res, "error: ") || json.Unmarshal([]byte(res), &m) != nil {
		return res
	}
	if got, _ := m["cacheScope"].(string); got != scope {
		t.Fatalf("cacheScope %q, want %q: %s", got, scope, res)
	}
	delete(m, "cacheScope")
	delete(m, "ttlMs")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
