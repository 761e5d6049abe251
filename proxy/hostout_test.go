package proxy

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// A request's params are written once, in place of mcp-go's, and the
// host's answer to it is kept as the host wrote it; the relay takes that
// answer only when it says what mcp-go read for this relay's request (two
// requests with the same params in flight could otherwise swap answers).
func TestHostOut_ParamsOnceAnswerMatched(t *testing.T) {
	var o hostOut
	m := o.expect("sampling/createMessage", json.RawMessage(`{"a":1,"b":2}`), json.RawMessage(`{"b":2,"a":1,"x":3}`))
	msg := []byte(`{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"a":1,"b":2}}` + "\n")
	want := `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"b":2,"a":1,"x":3}}` + "\n"
	if got := string(o.rewrite("s", msg)); got != want {
		t.Fatalf("rewrite:\n got  %s\n want %s", got, want)
	}
	if got := string(o.rewrite("s", msg)); got != string(msg) {
		t.Fatalf("the same params written twice: %s", got)
	}
	o.hostAnswer("other", []byte(`{"jsonrpc":"2.0","id":4,"result":{"model":"other session"}}`))
	if _, ok := m.answered(); ok {
		t.Fatal("another session's answer was kept")
	}
	const own = `{"role":"assistant","model":"m","content":{"type":"text","text":"hi"},"x-host":1}`
	o.hostAnswer("s", []byte(`{"jsonrpc":"2.0","id":4,"result":`+own+`}`))

	read := func(s string) *mcp.CreateMessageResult {
		var r mcp.CreateMessageResult
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	if got, ok := ownAnswer(m, read(own), nil); !ok || string(got) != own {
		t.Fatalf("the host's own answer: %s %v", got, ok)
	}
	if _, ok := ownAnswer(m, read(`{"role":"assistant","model":"another","content":{"type":"text","text":"hi"}}`), nil); ok {
		t.Fatal("an answer to another request was taken")
	}
	if _, ok := ownAnswer(m, read(own), errors.New("host gone")); ok {
		t.Fatal("an answer was taken though the request failed")
	}
	o.forget("sampling/createMessage", json.RawMessage(`{"a":1,"b":2}`), m)
	if len(o.byEnc) != 0 || len(o.pending) != 0 || len(o.order) != 0 {
		t.Fatalf("left behind: %v %v %v", o.byEnc, o.pending, o.order)
	}
}

// An answer to a request the relay gave up on is late once: the HTTP
// front accepts it and drops it. An answer to a request never written, or
// a second answer, is not late (mcp-go reads it as it would).
func TestHostOut_LateAnswerToAWithdrawnRequest(t *testing.T) {
	var o hostOut
	params := json.RawMessage(`{"message":"approve?"}`)
	m := o.expect("elicitation/create", params, params)
	o.rewrite("s", []byte(`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"approve?"}}`))
	if id, waiting := o.forget("elicitation/create", params, m); !waiting || string(id) != "7" {
		t.Fatalf("forget: id %s waiting %v", id, waiting)
	}
	answer := []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"cancelled"}}`)
	if o.hostAnswer("other", answer) {
		t.Fatal("another session's answer taken as late")
	}
	if o.hostAnswer("s", []byte(`{"jsonrpc":"2.0","id":8,"result":{}}`)) {
		t.Fatal("an answer to a request never written taken as late")
	}
	if !o.hostAnswer("s", answer) {
		t.Fatal("the answer to the withdrawn request is not late")
	}
	if o.hostAnswer("s", answer) {
		t.Fatal("a second answer to it taken as late")
	}
}
