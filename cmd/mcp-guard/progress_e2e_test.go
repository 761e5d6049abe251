package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// progressRules allow every tool of the fake upstream "db".
const progressRules = `
[[rule]]
server = "db"
tool = "*"
class = "read"
action = "allow"
`

// hostileStep is the message text of a flooding upstream's progress: an OSC
// retitle, BEL, a bidi override, a zero-width space and a tag character.
const hostileStep = "\x1b]0;pwned\x07step {i}\u202e\u200b\U000E0041"

// wireProgress is one progress notification as it crossed the host's stream.
type wireProgress struct {
	Token    any             `json:"progressToken"`
	Progress json.RawMessage `json:"progress"`
	Total    json.RawMessage `json:"total"`
	Message  *string         `json:"message"`
	raw      string
}

// callCollecting sends a tools/call with a progress token on a raw host and
// reads every line up to its response: the progress notifications before
// it, in order, and the response.
func callCollecting(t *testing.T, r *rawHost, id, tool, token string) ([]wireProgress, rpcMsg, time.Duration) {
	t.Helper()
	began := time.Now()
	r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"progressToken":"` + token + `"}}}`)
	type res struct {
		ps  []wireProgress
		m   rpcMsg
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var ps []wireProgress
		for {
			line, err := r.out.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			var m rpcMsg
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			if m.Method == "notifications/progress" {
				var p wireProgress
				if err := json.Unmarshal(m.Params, &p); err != nil {
					ch <- res{err: fmt.Errorf("progress params %s: %w", m.Params, err)}
					return
				}
				p.raw = strings.TrimSpace(line)
				ps = append(ps, p)
				continue
			}
			if m.Method == "" && string(m.ID) == id {
				m.line = strings.TrimSpace(line)
				ch <- res{ps: ps, m: m}
				return
			}
		}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			t.Fatalf("reading mcp-guard's stdout: %v\nstderr:\n%s", x.err, r.stderr)
		}
		return x.ps, x.m, time.Since(began)
	case <-time.After(60 * time.Second):
		t.Fatalf("no response to %s\nstderr:\n%s", id, r.stderr)
	}
	return nil, rpcMsg{}, 0
}

// clean reports the first character of s a terminal would act on rather
// than show (controls, bidi, zero-width, tags), if any.
func clean(s string) (rune, bool) {
	for _, r := range s {
		if safetext.Suspicious(r) {
			return r, false
		}
	}
	return 0, true
}

// A flood of 5,000 progress notifications with hostile text during one call:
// the host gets a bounded number (about 20 a second), each message escaped,
// values never going back, and the last one (progress 5000) on the stream
// before the result. The upstream's result reaches the host.
func TestProgress_FloodCoalescedEscapedLastBeforeResult(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}],
"calls":{"flood":{"do":"progress","count":5000,"intervalMs":0,"text":` + mustJSON(t, hostileStep) + `}}}`
	r := e.rawConnect(e.config(e.fake("db", script), progressRules))
	ps, m, took := callCollecting(t, r, "7", "db__flood", "flood-1")
	if m.Error != nil || !strings.Contains(string(m.Result), `"tool":"flood"`) {
		t.Fatalf("flood result: %s", m.line)
	}
	bound := progressBurstWant + int(took.Seconds()*20) + 2
	if len(ps) == 0 || len(ps) > bound {
		t.Fatalf("host got %d progress notifications in %s, want 1..%d", len(ps), took, bound)
	}
	last := -1.0
	for i, p := range ps {
		if p.Token != "flood-1" {
			t.Fatalf("notification %d has token %v: %s", i, p.Token, p.raw)
		}
		var v float64
		if err := json.Unmarshal(p.Progress, &v); err != nil || v < last {
			t.Fatalf("notification %d: progress %s after %v (values must not go back): %s", i, p.Progress, last, p.raw)
		}
		last = v
		if p.Message == nil {
			t.Fatalf("notification %d lost its message: %s", i, p.raw)
		}
		if r, ok := clean(*p.Message); !ok {
			t.Fatalf("notification %d carries raw U+%04X in its message: %s", i, r, p.raw)
		}
		want := safetext.Escape(strings.ReplaceAll(hostileStep, "{i}", string(p.Progress)))
		if *p.Message != want || !strings.Contains(*p.Message, `\u{001B}]0;pwned\u{0007}`) {
			t.Fatalf("notification %d message %q, want %q", i, *p.Message, want)
		}
	}
	if string(ps[len(ps)-1].Progress) != "5000" || string(ps[len(ps)-1].Total) != "5000" {
		t.Fatalf("last progress before the result: %s, want progress 5000 of 5000", ps[len(ps)-1].raw)
	}
	t.Logf("%d of 5000 progress notifications passed in %s", len(ps), took)
}

// progressBurstWant is the burst the flood test allows on top of 20 a
// second: proxy's progressBurst.
const progressBurstWant = 20

// An ordinary server reporting 10 steps within a second: all 10 reach the
// go-sdk host unchanged, under its token, before the call returns.
func TestProgress_SlowProgressPassesUnchanged(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"work","inputSchema":{"type":"object"}},{"name":"mark","inputSchema":{"type":"object"}}],
"calls":{"work":{"do":"progress","count":10,"intervalMs":90},"mark":{"do":"progress","count":1,"intervalMs":1}}}`
	h := e.connect(e.config(e.fake("db", script), progressRules), "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "db__work", Arguments: map[string]any{}}
	params.SetProgressToken("work-1")
	res, err := h.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	// The signal that every notification of work-1 was handled: one sent
	// after its result (the host handles notifications in the order they
	// arrive, and mcp-guard writes a call's progress before its result).
	mark := &mcp.CallToolParams{Name: "db__mark", Arguments: map[string]any{}}
	mark.SetProgressToken("mark-1")
	if res, err := h.CallTool(ctx, mark); err != nil || res.IsError {
		t.Fatalf("mark: %v %v", err, res)
	}
	eventually(t, "the mark's progress notification", func() bool {
		return slices.ContainsFunc(h.progressSeen(), func(p *mcp.ProgressNotificationParams) bool { return p.ProgressToken == "mark-1" })
	})
	var ps []*mcp.ProgressNotificationParams
	for _, p := range h.progressSeen() {
		if p.ProgressToken != "mark-1" {
			ps = append(ps, p)
		}
	}
	if len(ps) != 10 {
		t.Fatalf("host got %d progress notifications for work-1, want 10", len(ps))
	}
	for i, p := range ps {
		n := i + 1
		if p.ProgressToken != "work-1" || p.Progress != float64(n) || p.Total != 10 || p.Message != fmt.Sprintf("step %d", n) {
			t.Fatalf("notification %d: %+v, want token work-1, progress %d of 10, message %q", i, *p, n, fmt.Sprintf("step %d", n))
		}
	}
}

// Progress values never go back: a lower one than the host already has is
// dropped, as is one whose progress is not a number; a total that is not a
// number is left out, and so is a message that is not a string and any
// member the protocol does not define.
func TestProgress_ValuesMonotonicAndFieldsChecked(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"odd","inputSchema":{"type":"object"}}],"calls":{"odd":{"do":"progress","intervalMs":20,"steps":[
{"progress":1,"total":4,"message":"one"},
{"progress":3},
{"progress":2,"message":"back"},
{"progress":"4"},
{"message":"no progress"},
{"progress":3,"total":"many","message":7,"x-evil":"\u001b[2J"},
{"progress":4,"total":4,"message":"done"}]}}}`
	r := e.rawConnect(e.config(e.fake("db", script), progressRules))
	ps, m, _ := callCollecting(t, r, "9", "db__odd", "odd-1")
	if m.Error != nil {
		t.Fatalf("result: %s", m.line)
	}
	var got []string
	for _, p := range ps {
		var params map[string]json.RawMessage
		var n rpcMsg
		json.Unmarshal([]byte(p.raw), &n)
		json.Unmarshal(n.Params, &params)
		keys := make([]string, 0, len(params))
		for _, k := range []string{"progressToken", "progress", "total", "message"} {
			if v, ok := params[k]; ok {
				keys = append(keys, k+"="+string(v))
			}
		}
		if len(keys) != len(params) {
			t.Fatalf("unexpected members passed on: %s", p.raw)
		}
		got = append(got, strings.Join(keys, " "))
	}
	want := []string{
		`progressToken="odd-1" progress=1 total=4 message="one"`,
		`progressToken="odd-1" progress=3`,
		`progressToken="odd-1" progress=3`,
		`progressToken="odd-1" progress=4 total=4 message="done"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("host got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Over the HTTP host, a flood is bounded and escaped too, values never go
// back, and the last progress is on the call's event stream before the
// result.
func TestProgress_HTTPHostFloodBounded(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}],
"calls":{"flood":{"do":"progress","count":3000,"intervalMs":0,"text":` + mustJSON(t, hostileStep) + `}}}`
	endpoint, _ := e.httpServe(e.config(e.fake("db", script), progressRules), "--http", "127.0.0.1:0")
	post := func(sess, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sess != "" {
			req.Header.Set("Mcp-Session-Id", sess)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("", initBody)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sess := resp.Header.Get("Mcp-Session-Id")
	if sess == "" {
		t.Fatalf("no session id (status %d)", resp.StatusCode)
	}
	resp = post(sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	began := time.Now()
	resp = post(sess, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"db__flood","arguments":{},"_meta":{"progressToken":"h-1"}}}`)
	defer resp.Body.Close()
	var ps []wireProgress
	var result string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m rpcMsg
		if json.Unmarshal([]byte(data), &m) != nil {
			t.Fatalf("event %q", data)
		}
		if m.Method == "notifications/progress" {
			var p wireProgress
			json.Unmarshal(m.Params, &p)
			p.raw = data
			ps = append(ps, p)
			continue
		}
		if string(m.ID) == "2" {
			result = data
			break
		}
	}
	took := time.Since(began)
	if !strings.Contains(result, `"tool":"flood"`) {
		t.Fatalf("result %q", result)
	}
	if bound := progressBurstWant + int(took.Seconds()*20) + 2; len(ps) == 0 || len(ps) > bound {
		t.Fatalf("host got %d progress notifications in %s, want 1..%d", len(ps), took, bound)
	}
	for i, p := range ps {
		if p.Message == nil {
			t.Fatalf("notification %d: no message: %s", i, p.raw)
		}
		if r, ok := clean(*p.Message); !ok {
			t.Fatalf("notification %d carries raw U+%04X: %s", i, r, p.raw)
		}
	}
	last := -1.0
	for i, p := range ps {
		var v float64
		if err := json.Unmarshal(p.Progress, &v); err != nil || v < last {
			t.Fatalf("notification %d: progress %s after %v: %s", i, p.Progress, last, p.raw)
		}
		last = v
	}
	if string(ps[len(ps)-1].Progress) != "3000" {
		t.Fatalf("last progress before the result: %s, want 3000", ps[len(ps)-1].raw)
	}
}
