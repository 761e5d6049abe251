package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
)

// approvalDecisions counts the ledger's approval.approved and
// approval.denied events.
func (m *memProxy) approvalDecisions(t *testing.T) int {
	t.Helper()
	evs, err := m.led.Events(context.Background(), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Kind == "approval.approved" || ev.Kind == "approval.denied" {
			n++
		}
	}
	return n
}

// The host's answer decides the one approval its form was sent for, once
// (A7): a raw host that declared elicitation answers the form, then sends
// the same answer again and an answer to a request never sent; only the
// first decides, and the call runs once. The second call's form, left
// unanswered, is withdrawn when the wait ends: the host is told
// (notifications/cancelled for the form's id) and the call is answered.
func TestWalk_HostApprovalAnswerIsUsedOnce(t *testing.T) {
	walk(t, func(t *testing.T) {
		ask := []classify.Rule{{Server: "db", Tool: "echo", Class: classify.Write, Action: classify.Ask}}
		p := newMemProxyWith(t, mustRules(t, ask), func(o *Options) {
			o.Limits.ApprovalWait = 4 * time.Second
			o.AskIn = func(int) string { return config.AskInHost }
		}, [2]string{"db", confirmTools})
		h := startMemHostCaps(t, p.Proxy, `{"elicitation":{}}`)
		h.send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"db__echo","arguments":{"n":1}}}`)
		form := h.waitMethod("elicitation/create")
		answer := `{"jsonrpc":"2.0","id":` + string(form.ID) + `,"result":{"action":"accept","content":{"decision":"approve"}}}`
		h.send(answer)
		if a := h.answerLine("c1"); strings.Contains(a, `"error"`) || strings.Contains(a, `"isError":true`) {
			t.Fatalf("the approved call: %s", a)
		}
		h.send(answer) // replayed
		h.send(`{"jsonrpc":"2.0","id":9999,"result":{"action":"accept","content":{"decision":"approve"}}}`)
		h.send(`{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"db__echo","arguments":{"n":2}}}`)
		form2 := h.first("the second call's form", func(m rpcMsg) bool {
			return m.Method == "elicitation/create" && string(m.ID) != string(form.ID)
		})
		if a := h.answerLine("c2"); !strings.Contains(a, "waited") {
			t.Fatalf("the second call, its form unanswered, with a replayed answer sent: %s", a)
		}
		cancelled := h.waitMethod("notifications/cancelled")
		var ps struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(cancelled.Params, &ps) != nil || string(ps.RequestID) != string(form2.ID) {
			t.Fatalf("a cancellation for another request than the form %s: %s", form2.ID, cancelled.line)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 1 {
			t.Fatalf("the upstream got %d calls, want 1", n)
		}
		if n := p.approvalDecisions(t); n != 1 {
			t.Fatalf("%d approval decisions in the ledger, want 1", n)
		}
	})
}
