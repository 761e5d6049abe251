package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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

// progressBurstWant is the burst the flood test allows on top of 20 a
// second: proxy's progressBurst.
const progressBurstWant = 20

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
