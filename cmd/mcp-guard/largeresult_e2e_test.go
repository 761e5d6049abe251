package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// A large tool result reaches the host byte for byte as the server sent it,
// and the ledger records its isError as encoding/json reads it, both when
// the one-pass reader reads it (big: 200 KB of text with escapes and
// non-ASCII, isError true) and when it leaves it to encoding/json (odd:
// isError twice, once as IsError, where encoding/json takes the last).
func TestServe_LargeResultsPassAsTheServerSentThem(t *testing.T) {
	text := strings.Repeat(`line \"quoted\" \\ caf\u00e9 café <b>\n`, 5000)
	big := `{"content":[{"type":"text","text":"` + text + `"}],"isError":true,"_meta":{"k":"v"}}`
	odd := `{"content":[{"type":"text","text":"x"}],"isError":true,"IsError":false}`
	script := `{"tools":[{"name":"big","inputSchema":{"type":"object"}},{"name":"odd","inputSchema":{"type":"object"}}],
"calls":{"big":{"do":"result","result":` + big + `},"odd":{"do":"result","result":` + odd + `}}}`
	e := newEnv(t)
	r := e.rawConnect(e.config(e.fake("db", script), allowAll))

	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"db__big","arguments":{}}}`)
	if m := r.waitID(`1`); string(m.Result) != big {
		t.Fatalf("the big result reached the host as %d bytes, not the server's %d", len(m.Result), len(big))
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"db__odd","arguments":{}}}`)
	if m := r.waitID(`2`); string(m.Result) != odd {
		t.Fatalf("the odd result reached the host as %s", m.Result)
	}

	led := e.openLedger()
	want := map[string]bool{"db__big": true, "db__odd": false}
	eventually(t, "both outcomes recorded", func() bool {
		rows, err := led.Calls(context.Background(), ledger.CallFilter{Limit: 10})
		if err != nil || len(rows) != 2 {
			return false
		}
		for _, row := range rows {
			if row.State != ledger.StateDone {
				return false
			}
		}
		return true
	})
	rows, err := led.Calls(context.Background(), ledger.CallFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.IsError != want[row.Exposed] {
			t.Errorf("%s recorded isError %v, want %v (encoding/json's reading)", row.Exposed, row.IsError, want[row.Exposed])
		}
		if row.Exposed == "db__big" && row.ResultBytes != int64(len(big)) {
			t.Errorf("the big result recorded as %d bytes, want %d", row.ResultBytes, len(big))
		}
	}
}
