package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// The walks of a call's progress: what the host reads of a server's
// notifications/progress during one call, in the order it reads them.

var progressRules = []classify.Rule{{Server: "db", Tool: "*", Class: classify.Read, Action: classify.Allow}}

// hostileStep is the message text of a flooding upstream's progress: an OSC
// retitle, BEL, a bidi override, a zero-width space and a tag character.
const hostileStep = "\x1b]0;pwned\x07step {i}\u202e\u200b\U000E0041"

// progressSeen is one progress notification as the host read it.
type progressSeen struct {
	Token    any             `json:"progressToken"`
	Progress json.RawMessage `json:"progress"`
	Total    json.RawMessage `json:"total"`
	Message  *string         `json:"message"`
	params   map[string]json.RawMessage
	raw      string
}

// callProgress calls tool with a progress token under the string id and
// returns the progress notifications the host read before its answer, in
// order, and the answer.
func callProgress(t *testing.T, h *memHost, id, tool, token string) ([]progressSeen, memReply) {
	t.Helper()
	r := h.request(id, "tools/call", `{"name":"`+tool+`","arguments":{},"_meta":{"progressToken":"`+token+`"}}`)
	var ps []progressSeen
	for _, l := range h.before(id) {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(l), &m) != nil || m.Method != "notifications/progress" {
			continue
		}
		p := progressSeen{raw: l}
		if json.Unmarshal(m.Params, &p) != nil || json.Unmarshal(m.Params, &p.params) != nil {
			t.Fatalf("progress params: %s", l)
		}
		if p.Token == token {
			ps = append(ps, p)
		}
	}
	return ps, r
}

// A flood of 5,000 progress notifications with hostile text during one call:
// the host gets a bounded number, each message escaped, values never going
// back, and the last one (progress 5000) before the result. The upstream's
// result reaches the host. In the bubble the flood takes no time, so the
// host gets at most the burst and the last.
func TestWalk_ProgressFloodCoalescedEscapedLastBeforeResult(t *testing.T) {
	walk(t, func(t *testing.T) {
		hostile, _ := json.Marshal(hostileStep)
		script := `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}],
"calls":{"flood":{"do":"progress","count":5000,"intervalMs":0,"text":` + string(hostile) + `}}}`
		p := newMemProxy(t, progressRules, [2]string{"db", script})
		h := startMemHost(t, p.Proxy)
		ps, r := callProgress(t, h, "7", "db__flood", "flood-1")
		if r.Error != nil || !strings.Contains(string(r.Result), `"tool":"flood"`) {
			t.Fatalf("flood result: %+v %s", r.Error, r.Result)
		}
		if len(ps) == 0 || len(ps) > progressBurst+1 {
			t.Fatalf("host got %d progress notifications at once, want 1..%d", len(ps), progressBurst+1)
		}
		last := -1.0
		for i, p := range ps {
			var v float64
			if err := json.Unmarshal(p.Progress, &v); err != nil || v < last {
				t.Fatalf("notification %d: progress %s after %v (values must not go back): %s", i, p.Progress, last, p.raw)
			}
			last = v
			if p.Message == nil {
				t.Fatalf("notification %d lost its message: %s", i, p.raw)
			}
			for _, c := range *p.Message {
				if safetext.Suspicious(c) {
					t.Fatalf("notification %d carries raw U+%04X in its message: %s", i, c, p.raw)
				}
			}
			want := safetext.Escape(strings.ReplaceAll(hostileStep, "{i}", string(p.Progress)))
			if *p.Message != want || !strings.Contains(*p.Message, `\u{001B}]0;pwned\u{0007}`) {
				t.Fatalf("notification %d message %q, want %q", i, *p.Message, want)
			}
		}
		if end := ps[len(ps)-1]; string(end.Progress) != "5000" || string(end.Total) != "5000" {
			t.Fatalf("last progress before the result: %s, want progress 5000 of 5000", end.raw)
		}
	})
}

// An ordinary server reporting 10 steps within a second: all 10 reach the
// host unchanged, under its token, before the call's answer.
func TestWalk_SlowProgressPassesUnchanged(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"work","inputSchema":{"type":"object"}}],"calls":{"work":{"do":"progress","count":10,"intervalMs":90}}}`
		p := newMemProxy(t, progressRules, [2]string{"db", script})
		h := startMemHost(t, p.Proxy)
		ps, r := callProgress(t, h, "w", "db__work", "work-1")
		if r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("call: %+v %s", r.Error, r.Result)
		}
		if len(ps) != 10 {
			t.Fatalf("host got %d progress notifications for work-1, want 10", len(ps))
		}
		for i, p := range ps {
			n := i + 1
			if p.Token != "work-1" || string(p.Progress) != fmt.Sprint(n) || string(p.Total) != "10" || p.Message == nil || *p.Message != fmt.Sprintf("step %d", n) || len(p.params) != 4 {
				t.Fatalf("notification %d: %s, want token work-1, progress %d of 10, message %q", i, p.raw, n, fmt.Sprintf("step %d", n))
			}
		}
	})
}

// Progress values never go back: a lower one than the host already has is
// dropped, as is one whose progress is not a number; a total that is not a
// number is left out, and so is a message that is not a string and any
// member the protocol does not define.
func TestWalk_ProgressValuesMonotonicAndFieldsChecked(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"odd","inputSchema":{"type":"object"}}],"calls":{"odd":{"do":"progress","intervalMs":20,"steps":[
{"progress":1,"total":4,"message":"one"},
{"progress":3},
{"progress":2,"message":"back"},
{"progress":"4"},
{"message":"no progress"},
{"progress":3,"total":"many","message":7,"x-evil":"\u001b[2J"},
{"progress":4,"total":4,"message":"done"}]}}}`
		p := newMemProxy(t, progressRules, [2]string{"db", script})
		h := startMemHost(t, p.Proxy)
		ps, r := callProgress(t, h, "9", "db__odd", "odd-1")
		if r.Error != nil {
			t.Fatalf("result: %+v", r.Error)
		}
		var got []string
		for _, p := range ps {
			var keys []string
			for _, k := range []string{"progressToken", "progress", "total", "message"} {
				if v, ok := p.params[k]; ok {
					keys = append(keys, k+"="+string(v))
				}
			}
			if len(keys) != len(p.params) {
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
	})
}

// Over the HTTP host, a flood is bounded and escaped too, values never go
// back, and the last progress is on the call's own event stream before
// the result.
func TestWalk_HTTPProgressFloodBounded(t *testing.T) {
	walk(t, func(t *testing.T) {
		hostile, _ := json.Marshal(hostileStep)
		script := `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}],
"calls":{"flood":{"do":"progress","count":3000,"intervalMs":0,"text":` + string(hostile) + `}}}`
		h := startHTTPHost(t, newMemProxy(t, progressRules, [2]string{"db", script}).Proxy).session(initBody)
		_, msgs := h.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"db__flood","arguments":{},"_meta":{"progressToken":"h-1"}}}`)
		var ps []progressSeen
		var result string
		for _, m := range msgs {
			if m.Method == "notifications/progress" {
				p := progressSeen{raw: m.line}
				json.Unmarshal(m.Params, &p)
				ps = append(ps, p)
				continue
			}
			if string(m.ID) == "2" {
				result = m.line
				break
			}
		}
		if !strings.Contains(result, `"tool":"flood"`) {
			t.Fatalf("result %q", result)
		}
		if len(ps) == 0 || len(ps) > progressBurst+1 {
			t.Fatalf("host got %d progress notifications at once, want 1..%d", len(ps), progressBurst+1)
		}
		last := -1.0
		for i, p := range ps {
			if p.Message == nil {
				t.Fatalf("notification %d: no message: %s", i, p.raw)
			}
			for _, c := range *p.Message {
				if safetext.Suspicious(c) {
					t.Fatalf("notification %d carries raw U+%04X: %s", i, c, p.raw)
				}
			}
			var v float64
			if err := json.Unmarshal(p.Progress, &v); err != nil || v < last {
				t.Fatalf("notification %d: progress %s after %v: %s", i, p.Progress, last, p.raw)
			}
			last = v
		}
		if string(ps[len(ps)-1].Progress) != "3000" {
			t.Fatalf("last progress before the result: %s, want 3000", ps[len(ps)-1].raw)
		}
	})
}
