package proxy

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// A request goes to the host with its params exactly as given, and its
// answer comes back exactly as the host wrote it: its member order, its
// unknown members, its numbers as written. An answer under another id, a
// string id with the same digits, or a message with a method is not its
// answer.
func TestHostPeer_ParamsOutAndAnswerBackAsWritten(t *testing.T) {
	var s hostPeer
	sent := make(chan []byte, 1)
	send := func(_ context.Context, _ string, line []byte) error { sent <- line; return nil }
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	const params = `{"messages":[{"role":"user","content":{"type":"text","text":"<b>&"}}],"maxTokens":5,"x":1.50}`
	go func() {
		res, failed, err := s.ask(context.Background(), "sampling/createMessage", json.RawMessage(params), send, func(int64) { t.Error("withdrawn") })
		if failed != nil {
			t.Errorf("failed: %+v", failed)
		}
		done <- answer{res, err}
	}()
	line := <-sent
	if want := `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":` + params + `}`; string(line) != want {
		t.Fatalf("sent\n %s\nwant\n %s", line, want)
	}
	for _, other := range []string{
		`{"jsonrpc":"2.0","id":2,"result":{"model":"other"}}`,
		`{"jsonrpc":"2.0","id":"1","result":{"model":"string id"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","result":{"model":"a request"}}`,
	} {
		if s.answered([]byte(other)) {
			t.Fatalf("taken as the answer: %s", other)
		}
	}
	const own = `{"role":"assistant","model":"m","content":{"type":"text","text":"hi <b>"},"x-host":1.50}`
	if !s.answered([]byte(`{"jsonrpc":"2.0","id":1,"result":` + own + `}`)) {
		t.Fatal("the answer was not taken")
	}
	if a := <-done; a.err != nil || string(a.res) != own {
		t.Fatalf("answer %s %v; want the host's own bytes %s", a.res, a.err, own)
	}
	if len(s.pending) != 0 || len(s.withdrawn) != 0 {
		t.Fatalf("left behind: %v %v", s.pending, s.withdrawn)
	}
}

// A request whose asker gives up while the host still has it open is
// withdrawn: the host is told its id, and its late answer is taken once
// and dropped. A second answer to it, or one to a request never sent, is
// not taken.
func TestHostPeer_LateAnswerToAWithdrawnRequest(t *testing.T) {
	var s hostPeer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	var told []int64
	send := func(context.Context, string, []byte) error { return nil }
	if _, _, err := s.ask(ctx, "elicitation/create", json.RawMessage(`{"message":"approve?"}`), send, func(id int64) { told = append(told, id) }); err == nil {
		t.Fatal("the ask did not end with its context")
	}
	if len(told) != 1 || told[0] != 1 {
		t.Fatalf("the host was told %v; want request 1 withdrawn", told)
	}
	if s.answered([]byte(`{"jsonrpc":"2.0","id":8,"result":{}}`)) {
		t.Fatal("an answer to a request never sent was taken")
	}
	late := []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"cancelled"}}`)
	if !s.answered(late) {
		t.Fatal("the late answer to the withdrawn request was not taken")
	}
	if s.answered(late) {
		t.Fatal("a second answer to it was taken")
	}
}
