package proxy

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
)

const ledgerTools = `{"tools":[
{"name":"slow","inputSchema":{"type":"object"}},
{"name":"echo","inputSchema":{"type":"object"}},
{"name":"drop","inputSchema":{"type":"object"}}],
"calls":{"slow":{"do":"sleep","ms":30000}}}`

var ledgerRules = []classify.Rule{
	{Server: "db", Tool: "drop", Class: classify.Destructive, Action: classify.Deny, Reason: "never"},
	{Server: "db", Tool: "*", Class: classify.Read, Action: classify.Allow},
}

// Arguments that are not strict JSON are refused, kept verbatim out of band,
// never stored as arguments, and never forwarded. Strict JSON nested deeper
// than the ledger can hold is refused and kept out of band too, to a known
// tool and to an unknown name alike. A request mcp-go itself cannot read (a
// number beyond a float64) is refused before the gate and still leaves its
// row, naming the tool it was for.
func TestWalk_InvalidArgumentsKeptOutOfBand(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, ledgerRules, [2]string{"db", ledgerTools})
		h := startMemHost(t, p.Proxy)
		bad := `{"q":"a","\u0071":"b"}`
		if r := h.request("1", "tools/call", `{"name":"db__echo","arguments":`+bad+`}`); !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "duplicate") {
			t.Fatalf("duplicate keys: %+v %s", r.Error, r.Result)
		}
		deep := `{"a":` + strings.Repeat("[", 255) + strings.Repeat("]", 255) + `}` // 256 levels
		if r := h.request("2", "tools/call", `{"name":"db__echo","arguments":`+deep+`}`); !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "nest 256 levels") {
			t.Fatalf("deep arguments: %+v %s", r.Error, r.Result)
		}
		h.request("3", "tools/call", `{"name":"db__nope","arguments":`+deep+`}`)
		huge := `{"q":1e400}`
		if r := h.request("4", "tools/call", `{"name":"db__echo","arguments":`+huge+`}`); r.Error == nil {
			t.Fatalf("unreadable request answered: %s", r.Result)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 0 {
			t.Fatalf("invalid, deep or unreadable arguments reached the upstream (%d calls)", n)
		}
		rows := p.calls(t) // newest first
		if len(rows) != 4 {
			t.Fatalf("%d rows, want 4: %+v", len(rows), rows)
		}
		if row := rows[3]; row.Decision != "invalid" || row.Args != nil || string(row.ArgsInvalid) != bad {
			t.Fatalf("duplicate keys' row %+v; want decision invalid, no args, the bytes verbatim in args_invalid", row)
		}
		if row := rows[2]; row.Decision != "invalid" || row.Args != nil || string(row.ArgsInvalid) != deep {
			t.Fatalf("deep arguments' row %+v", row)
		}
		if row := rows[1]; row.Decision != "unknown_tool" || row.Exposed != "db__nope" || row.Args != nil || string(row.ArgsInvalid) != deep {
			t.Fatalf("the unknown name's row %+v", row)
		}
		if row := rows[0]; row.Decision != "invalid" || row.Server != "db" || row.Tool != "echo" || row.PinDigest == "" || row.Args != nil || string(row.ArgsInvalid) != huge ||
			!strings.HasPrefix(row.Reason, "the request could not be read: ") {
			t.Fatalf("the unreadable request's row %+v; want invalid, db/echo and its pin, its arguments verbatim out of band", row)
		}
	})
}
