package main

import (
	"context"
	"testing"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// A tools/call over stdio is answered under the id the host sent, byte for
// byte, even a number no float64 holds. Calls out of the ordinary (other
// _meta, a task) still work, served by mcp-go instead; every call reaches
// the upstream once and has its ledger row.
func TestServe_ToolsCallAnsweredUnderTheHostsExactID(t *testing.T) {
	e := newEnv(t)
	r := e.rawConnect(e.config(e.fake("db", ledgerTools), ledgerRules))

	r.send(`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"db__echo","arguments":{"n":1}}}`)
	if m := r.waitID(`9007199254740993`); m.Error != nil || len(m.Result) == 0 {
		t.Fatalf("answer to a call with id 2^53+1: %s", m.line)
	}
	r.send(`{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"db__echo","arguments":{"n":2},"_meta":{"progressToken":"p-1"}}}`)
	if m := r.waitID(`"s-1"`); m.Error != nil || len(m.Result) == 0 {
		t.Fatalf("answer to a call with a string id and a progress token: %s", m.line)
	}
	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"db__echo","arguments":{"n":3},"_meta":{"progressToken":"p-2","vendor.example/trace":"x"}}}`)
	if m := r.waitID(`7`); m.Error != nil || len(m.Result) == 0 {
		t.Fatalf("answer to a call with other _meta: %s", m.line)
	}
	r.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"db__drop","arguments":{}}}`)
	if m := r.waitID(`8`); len(m.Result) == 0 {
		t.Fatalf("answer to a denied call: %s", m.line)
	}

	if n := len(e.calls("db")); n != 3 {
		t.Fatalf("the upstream got %d calls, want the 3 allowed ones", n)
	}
	led := e.openLedger()
	rows, err := led.Calls(context.Background(), ledger.CallFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, row := range rows {
		states[row.Exposed+" "+row.Decision]++
	}
	if len(rows) != 4 || states["db__echo allow"] != 3 || states["db__drop deny"] != 1 {
		t.Fatalf("ledger rows: %v", states)
	}
}
