package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The fidelity matrix (issue 20, "How it is shown"): the same raw JSON-RPC
// requests are sent to a server directly and through `mcp-guard serve`
// (rules allowing everything), on both host transports (stdio and
// streamable HTTP), for each upstream (npm server-everything over stdio,
// streamable HTTP and legacy SSE; go-sdk v1.8.0's conformance
// everything-server over streamable HTTP) and at each host protocol
// version. What each side receives is compared message by message after
// undoing only mcp-guard's name prefix (`<server>__`) and URI prefix
// (`mcp-guard://<server>/`). Permitted, each where it is undone, and
// nothing else (any other byte fails the test):
//   - initialize: serverInfo, capabilities and instructions are mcp-guard's
//     own (matrixCompareInit);
//   - the JSON-RPC envelope's member order; a server's timer-driven
//     notifications and its session-start list_changed (matrixNormalise);
//   - a list result's members other than its items, and tools that can only
//     run as tasks (matrixListItems);
//   - a server echoing the upstream progress token mcp-guard gave it, in its
//     result text (matrixReq.echoesToken).
//
// Requests are ids 1..n on both sides; progress tokens are the host's on
// both sides (mcp-guard maps them back). No progress here is faster than
// 20 a second, no text needs escaping and no credential is redacted, so
// those permitted differences cannot arise and are not undone.

// matrixVersions are the host protocol versions of the matrix. mcp-guard
// speaks 2025-11-25 to every upstream whatever the host speaks (PF7); the
// direct connection speaks the host's version.
var matrixVersions = []string{"2024-11-05", "2025-06-18", "2025-11-25"}

// matrixReq is one request of the sequence. In params, {N} stands for the
// name prefix and {U} for the URI prefix: empty sent directly,
// `<server>__` and `mcp-guard://<server>/` through mcp-guard.
type matrixReq struct {
	what, method, params string
	echoesToken          string // the result's text is the progress token, sent directly as this
}

// upstreamToken is a progress token mcp-guard chose, as result text.
var upstreamToken = regexp.MustCompile(`"text":"p-[0-9]+"`)

// everythingRequests are sent to npm server-everything.
var everythingRequests = []matrixReq{
	{"tools/list", "tools/list", "", ""},
	{"prompts/list", "prompts/list", "", ""},
	{"resources/list", "resources/list", "", ""},
	{"resources/templates/list", "resources/templates/list", "", ""},
	{"echo", "tools/call", `{"name":"{N}echo","arguments":{"message":"hello <guard> & \"co\" \u00e9"}}`, ""},
	{"structured content", "tools/call", `{"name":"{N}get-structured-content","arguments":{"location":"Chicago"}}`, ""},
	{"image", "tools/call", `{"name":"{N}get-tiny-image","arguments":{}}`, ""},
	{"annotated", "tools/call", `{"name":"{N}get-annotated-message","arguments":{"messageType":"error","includeImage":true}}`, ""},
	{"resource links", "tools/call", `{"name":"{N}get-resource-links","arguments":{"count":2}}`, ""},
	{"a read the server refuses (an error)", "resources/read", `{"uri":"{U}demo://resource/dynamic/text/not-a-number"}`, ""},
	{"a prompt missing its argument (an error)", "prompts/get", `{"name":"{N}args-prompt","arguments":{}}`, ""},
	{"prompts/get simple", "prompts/get", `{"name":"{N}simple-prompt"}`, ""},
	{"prompts/get with arguments", "prompts/get", `{"name":"{N}args-prompt","arguments":{"city":"Paris","state":"<b>"}}`, ""},
	{"resources/read", "resources/read", `{"uri":"{U}demo://resource/static/document/architecture.md"}`, ""},
	{"completion/complete", "completion/complete", `{"ref":{"type":"ref/prompt","name":"{N}completable-prompt"},"argument":{"name":"department","value":"S"}}`, ""},
	{"tools/call with a progress token", "tools/call", `{"name":"{N}trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"pt-1"}}`, ""},
}

// goSDKRequests are sent to go-sdk's conformance everything-server.
var goSDKRequests = []matrixReq{
	{"tools/list", "tools/list", "", ""},
	{"prompts/list", "prompts/list", "", ""},
	{"resources/list", "resources/list", "", ""},
	{"resources/templates/list", "resources/templates/list", "", ""},
	{"text", "tools/call", `{"name":"{N}test_simple_text","arguments":{}}`, ""},
	{"image", "tools/call", `{"name":"{N}test_image_content","arguments":{}}`, ""},
	{"embedded resource", "tools/call", `{"name":"{N}test_embedded_resource","arguments":{}}`, ""},
	{"several content types", "tools/call", `{"name":"{N}test_multiple_content_types","arguments":{}}`, ""},
	{"an error result", "tools/call", `{"name":"{N}test_error_handling","arguments":{}}`, ""},
	{"prompts/get simple", "prompts/get", `{"name":"{N}test_simple_prompt"}`, ""},
	{"prompts/get with arguments", "prompts/get", `{"name":"{N}test_prompt_with_arguments","arguments":{"arg1":"a <1>","arg2":"b"}}`, ""},
	{"resources/read text", "resources/read", `{"uri":"{U}test://static-text"}`, ""},
	{"resources/read blob", "resources/read", `{"uri":"{U}test://static-binary"}`, ""},
	{"resources/read template", "resources/read", `{"uri":"{U}test://template/42/data"}`, ""},
	{"completion/complete", "completion/complete", `{"ref":{"type":"ref/prompt","name":"{N}test_prompt_with_arguments"},"argument":{"name":"arg1","value":"a"}}`, ""},
	{"tools/call with a progress token", "tools/call", `{"name":"{N}test_tool_with_progress","arguments":{},"_meta":{"progressToken":7}}`, "7"},
}

// matrixTimerMethods are a server's own timer-driven notifications:
// server-everything sends log messages and resource updates on its own
// clock, so their content and timing differ between any two sessions.
// They are left out of the comparison, by method.
var matrixTimerMethods = []string{"notifications/message", "notifications/resources/updated",
	// Not timer-driven but session-driven: server-everything registers tools
	// once a session is initialized and says so. mcp-guard's upstream
	// session began before the host connected; mcp-guard takes the
	// server's list_changed itself (it re-lists and checks pins) and tells
	// the host only when what the host sees changes.
	"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}

// matrixUpstream is one upstream of the matrix: the [[server]] block that
// has mcp-guard reach it, and a direct raw connection to it.
type matrixUpstream struct {
	name     string
	requests []matrixReq
	start    func(t *testing.T) (block string, direct func(t *testing.T) *rawConn)
}

const matrixServer = "srv" // the upstream's name in mcp-guard's config

func matrixUpstreams() []matrixUpstream {
	urlBlock := func(u string) string { return fmt.Sprintf("[[server]]\nname = %q\nurl = %q\n", matrixServer, u) }
	return []matrixUpstream{
		{"everything over stdio", everythingRequests, func(t *testing.T) (string, func(*testing.T) *rawConn) {
			block := npmServer(t, matrixServer, everythingJS, "stdio")
			return block, func(t *testing.T) *rawConn {
				cmd := exec.Command("node", peerPath(t, everythingJS), "stdio")
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
				return stdioRawConn(t, cmd, &lockedBuffer{})
			}
		}},
		{"everything over streamable HTTP", everythingRequests, func(t *testing.T) (string, func(*testing.T) *rawConn) {
			u := fmt.Sprintf("http://127.0.0.1:%d/mcp", npmHTTPServer(t, "streamableHttp"))
			return urlBlock(u), func(t *testing.T) *rawConn { return streamableRawConn(t, u) }
		}},
		{"everything over SSE", everythingRequests, func(t *testing.T) (string, func(*testing.T) *rawConn) {
			u := fmt.Sprintf("http://127.0.0.1:%d/sse", npmHTTPServer(t, "sse"))
			return urlBlock(u), func(t *testing.T) *rawConn { return sseRawConn(t, u) }
		}},
		{"go-sdk everything-server over streamable HTTP", goSDKRequests, func(t *testing.T) (string, func(*testing.T) *rawConn) {
			u := conformanceServer(t)
			return urlBlock(u), func(t *testing.T) *rawConn { return streamableRawConn(t, u) }
		}},
	}
}

const matrixRules = allowAll + `
[[rule]]
server = "*"
prompt = "*"
action = "allow"

[[rule]]
server = "*"
resource = "*"
action = "allow"
`

func TestFidelity_Matrix(t *testing.T) {
	t.Parallel()
	for _, up := range matrixUpstreams() {
		t.Run(up.name, func(t *testing.T) {
			e := newEnv(t)
			block, direct := up.start(t)
			cfg := e.config(block, matrixRules)
			endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
			hosts := []struct {
				name    string
				connect func(t *testing.T) *rawConn
			}{
				{"stdio host", func(t *testing.T) *rawConn { return e.stdioRawConn(t, cfg) }},
				{"HTTP host", func(t *testing.T) *rawConn { return streamableRawConn(t, endpoint) }},
			}
			for _, h := range hosts {
				for _, v := range matrixVersions {
					t.Run(h.name+"/"+v, func(t *testing.T) {
						matrixCompare(t, up.requests, v, direct(t), h.connect(t))
					})
				}
			}
		})
	}
}

// matrixCompare runs the sequence on both connections and compares what
// each received.
func matrixCompare(t *testing.T, reqs []matrixReq, version string, direct, guard *rawConn) {
	t.Helper()
	d := direct.exchange(`"init"`, jsonrpcInit(version))
	g := guard.exchange(`"init"`, jsonrpcInit(version))
	matrixCompareInit(t, d[len(d)-1], g[len(g)-1])
	for _, c := range []*rawConn{direct, guard} {
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	prefix := strings.NewReplacer("{N}", matrixServer+"__", "{U}", "mcp-guard://"+matrixServer+"/")
	none := strings.NewReplacer("{N}", "", "{U}", "")
	for i, r := range reqs {
		id := fmt.Sprint(i + 1)
		msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + r.method + `"`
		if r.params != "" {
			msg += `,"params":` + r.params
		}
		msg += "}"
		want := matrixNormalise(t, direct.exchange(id, none.Replace(msg)), false)
		got := matrixNormalise(t, guard.exchange(id, prefix.Replace(msg)), true)
		if key, ok := fidelityListKey[r.method]; ok {
			want, got = matrixListItems(t, want, key, true), matrixListItems(t, got, key, false)
		}
		if r.echoesToken != "" {
			// go-sdk's test_tool_with_progress answers with the progress
			// token it was given as text: through mcp-guard that is the
			// upstream token mcp-guard chose (permitted: upstream progress
			// tokens), which mcp-guard does not rewrite in a result.
			got = slices.Clone(got)
			for i := range got {
				got[i] = upstreamToken.ReplaceAllString(got[i], `"text":"`+r.echoesToken+`"`)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: what the host received through mcp-guard differs from what the server sent directly:\n%s", r.what, matrixDiff(want, got))
		}
	}
}

// matrixNormalise turns received messages into what is compared: each
// message's members as the bytes received, in a fixed order. Through
// mcp-guard, the name and URI prefix is undone first. Permitted here:
//   - the envelope's member order (`jsonrpc`, `id`, `method`...): the
//     envelope belongs to each connection's own writer, not to the server;
//     every member's value is still compared byte for byte;
//   - a server's timer-driven notifications (matrixTimerMethods), left out.
//
// Upstream request ids and progress tokens need no undoing: mcp-guard maps
// them back, so the host's own must arrive. No progress here comes faster
// than 20 a second, no text holds what mcp-guard escapes, no credential is
// redacted: those permitted differences do not arise, so none is undone.
func matrixNormalise(t *testing.T, msgs []string, throughGuard bool) []string {
	t.Helper()
	undo := strings.NewReplacer(`"`+matrixServer+`__`, `"`, "mcp-guard://"+matrixServer+"/", "")
	var out []string
	for _, m := range msgs {
		if throughGuard {
			m = undo.Replace(m)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal([]byte(m), &env); err != nil {
			t.Fatalf("a message that is not a JSON object: %v\n%s", err, m)
		}
		var method string
		json.Unmarshal(env["method"], &method)
		if slices.Contains(matrixTimerMethods, method) {
			continue
		}
		var b strings.Builder
		for _, k := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
			if v, ok := env[k]; ok {
				fmt.Fprintf(&b, "%s=%s ", k, v)
				delete(env, k)
			}
		}
		for k, v := range env {
			fmt.Fprintf(&b, "%s=%s ", k, v) // members beyond JSON-RPC's: compared too
		}
		out = append(out, strings.TrimSpace(b.String()))
	}
	return out
}

// matrixCompareInit compares the initialize results. mcp-guard answers
// initialize itself, by design: serverInfo is mcp-guard's own,
// capabilities are what mcp-guard offers (not one server's), and
// instructions are each pinned server's under its name. Every other member
// (protocolVersion, anything a server adds) must be the server's.
func matrixCompareInit(t *testing.T, direct, guard string) {
	t.Helper()
	res := func(m string) map[string]json.RawMessage {
		var env struct{ Result map[string]json.RawMessage }
		if err := json.Unmarshal([]byte(m), &env); err != nil || env.Result == nil {
			t.Fatalf("initialize answered %s (%v)", m, err)
		}
		for _, k := range []string{"serverInfo", "capabilities", "instructions"} {
			delete(env.Result, k)
		}
		return env.Result
	}
	d, g := res(direct), res(guard)
	for k, v := range d {
		if string(g[k]) != string(v) {
			t.Errorf("initialize %s: through mcp-guard %s, directly %s", k, g[k], v)
		}
	}
	for k, v := range g {
		if _, ok := d[k]; !ok {
			t.Errorf("initialize %s: through mcp-guard %s, not sent directly", k, v)
		}
	}
}

// matrixDiff shows two message sequences side by side, marking where they
// first differ.
func matrixDiff(want, got []string) string {
	var b strings.Builder
	n := max(len(want), len(got))
	for i := 0; i < n; i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w == g {
			fmt.Fprintf(&b, "  message %d: equal (%d bytes)\n", i+1, len(w))
			continue
		}
		at := firstDiff(w, g)
		fmt.Fprintf(&b, "! message %d differs at byte %d:\n   direct:  %s\n   guarded: %s\n", i+1, at, excerpt(w, at), excerpt(g, at))
	}
	return b.String()
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// excerpt is s around byte at, cut to a readable length.
func excerpt(s string, at int) string {
	from, to := max(0, at-120), min(len(s), at+200)
	out := s[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

// matrixListItems keeps, of a list result, only its items, each as the
// bytes received. Permitted by design: mcp-guard answers a list from what
// it pinned at startup, merged over its servers and paginated by itself,
// so the list result's other members (nextCursor, go-sdk's ttlMs and
// cacheScope caching hints, _meta) are mcp-guard's, not a server's. And a
// tool that can only run as a task (execution.taskSupport "required") is
// not listed: mcp-guard does not relay tasks (TestServe_TasksAreNotOffered).
func matrixListItems(t *testing.T, msgs []string, key string, direct bool) []string {
	t.Helper()
	out := slices.Clone(msgs)
	for i, m := range out {
		at := strings.Index(m, " result=")
		if at < 0 {
			continue
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal([]byte(m[at+len(" result="):]), &res); err != nil {
			t.Fatalf("a list result that is not an object: %v\n%s", err, m)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(res[key], &items); err != nil {
			t.Fatalf("a list result without %s: %v\n%s", key, err, m)
		}
		var kept []string
		for _, it := range items {
			var task struct {
				Execution struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			}
			if direct && json.Unmarshal(it, &task) == nil && task.Execution.TaskSupport == "required" {
				continue
			}
			kept = append(kept, string(it))
		}
		out[i] = m[:at] + " " + key + "=[" + strings.Join(kept, ",") + "]"
	}
	return out
}
