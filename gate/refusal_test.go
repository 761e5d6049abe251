package gate

import (
	"context"
	"errors"
	"testing"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// A request refused before the pipeline is recorded by the one row gate
// builds: what it names and why it is refused, its arguments in band only
// when they were read and are recordable. Refuse writes that row to the
// ledger; nothing is forwarded.
func TestRefusal_RowSaysWhatWasRefusedAndWhy(t *testing.T) {
	unread := errors.New("arguments: a number beyond float64")
	tests := []struct {
		name string
		r    Refusal
		want ledger.CallStart
	}{
		{"tool nothing names", Refusal{Kind: KindTool, SessionID: "s", Exposed: "nope", Args: []byte(`{"a":1}`)},
			ledger.CallStart{SessionID: "s", Exposed: "nope", Decision: "unknown_tool", Reason: "no tool of that name is exposed", Args: []byte(`{"a":1}`)}},
		{"tool hidden", Refusal{Kind: KindTool, SessionID: "s", Exposed: "d__same", Server: "d", Name: "same", Hidden: "listed twice"},
			ledger.CallStart{SessionID: "s", Exposed: "d__same", Server: "d", Tool: "same", Decision: "unknown_tool", Reason: "the tool is not exposed: listed twice"}},
		{"tool hidden, unread too", Refusal{Kind: KindTool, Exposed: "d__same", Server: "d", Name: "same", Hidden: "listed twice", Args: []byte(`{"a":1e999}`), Unread: unread},
			ledger.CallStart{Exposed: "d__same", Server: "d", Tool: "same", Decision: "unknown_tool", Reason: "the tool is not exposed: listed twice; the request could not be read either: " + unread.Error(), ArgsInvalid: []byte(`{"a":1e999}`)}},
		{"shown tool, unread", Refusal{Kind: KindTool, Exposed: "fs__read", Server: "fs", Name: "read", Shown: true, PinDigest: "p1", Args: []byte(`{"a":1}`), Unread: unread},
			ledger.CallStart{Exposed: "fs__read", Server: "fs", Tool: "read", PinDigest: "p1", Decision: "invalid", Reason: "the request could not be read: " + unread.Error(), ArgsInvalid: []byte(`{"a":1}`)}},
		{"retry of no call", Refusal{Kind: KindTool, Exposed: "fs__read", Server: "fs", Name: "read", Shown: true, PinDigest: "p1", Args: []byte(`{"a":1,"a":2}`), Retry: errors.New("no such request state")},
			ledger.CallStart{Exposed: "fs__read", Server: "fs", Tool: "read", PinDigest: "p1", Decision: "invalid", Reason: "multi round-trip retry refused: no such request state", ArgsInvalid: []byte(`{"a":1,"a":2}`)}},
		{"prompt nothing names", Refusal{Kind: KindPrompt, Exposed: "", Args: []byte(`{"who":"me"}`)},
			ledger.CallStart{Kind: ledger.KindPrompt, Exposed: "(empty)", Decision: "unknown_prompt", Reason: "no prompt of that name is exposed", Args: []byte(`{"who":"me"}`)}},
		{"prompt hidden", Refusal{Kind: KindPrompt, Exposed: "fs__greet", Server: "fs", Name: "greet", Hidden: "its text changed"},
			ledger.CallStart{Kind: ledger.KindPrompt, Exposed: "fs__greet", Server: "fs", Tool: "greet", Decision: "unknown_prompt", Reason: "the prompt is not exposed: its text changed"}},
		{"resource of no server", Refusal{Kind: KindResource, Exposed: "file:///etc/passwd"},
			ledger.CallStart{Kind: ledger.KindResource, Exposed: "file:///etc/passwd", Decision: "unknown_resource", Reason: "neither a resource mcp-guard exposes nor one of its templates' URIs"}},
		{"resource of a server", Refusal{Kind: KindResource, Exposed: "mcp-guard://fs/file:///a", Server: "fs", Name: "file:///a", Hidden: "no rule covers it"},
			ledger.CallStart{Kind: ledger.KindResource, Exposed: "mcp-guard://fs/file:///a", Server: "fs", Tool: "file:///a", Decision: "unknown_resource", Reason: "the resource is not exposed: no rule covers it", Args: []byte(`{"uri":"file:///a"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.r.Row()
			if got.Kind != tt.want.Kind || got.SessionID != tt.want.SessionID || got.Exposed != tt.want.Exposed || got.Server != tt.want.Server ||
				got.Tool != tt.want.Tool || got.PinDigest != tt.want.PinDigest || got.Decision != tt.want.Decision || got.Reason != tt.want.Reason ||
				string(got.Args) != string(tt.want.Args) || string(got.ArgsInvalid) != string(tt.want.ArgsInvalid) {
				t.Errorf("Row():\n got  %+v\n want %+v", got, tt.want)
			}
		})
	}

	pt := newPipeTest(t)
	before := pt.rows()
	id, start, err := pt.p.Refuse(context.Background(), Refusal{Kind: KindTool, SessionID: pt.sess.ID(), Exposed: "fs__gone", Server: "fs", Name: "gone", Hidden: "withdrawn"})
	if err != nil || id == 0 || start.Decision != "unknown_tool" {
		t.Fatalf("Refuse: id %d %+v %v", id, start, err)
	}
	if pt.rows() != before+1 {
		t.Fatalf("rows %d, want %d", pt.rows(), before+1)
	}
	rows, err := pt.l.Calls(context.Background(), ledger.CallFilter{Limit: 1})
	if err != nil || len(rows) != 1 || rows[0].ID != id || rows[0].State != "refused" || rows[0].Reason != "the tool is not exposed: withdrawn" {
		t.Fatalf("the ledger's row: %+v %v", rows, err)
	}
}
