package upstream

import (
	"encoding/json"
	"testing"
)

// Each request to a 2026-07-28 server carries the protocol's _meta,
// merged with a _meta it already has; a legacy server's requests are sent
// as they are.
func TestWithMeta_MergesForModernOnly(t *testing.T) {
	u := &Client{version: "1.0"}
	in := json.RawMessage(`{"name":"x","_meta":{"progressToken":"p-1"}}`)
	if got := u.withMeta(in); string(got) != string(in) {
		t.Fatalf("legacy: %s", got)
	}
	u.meta = u.modernMeta()
	var got struct {
		Name string                     `json:"name"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(u.withMeta(in), &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != "x" || string(got.Meta["progressToken"]) != `"p-1"` || string(got.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` ||
		got.Meta["io.modelcontextprotocol/clientCapabilities"] == nil || got.Meta["io.modelcontextprotocol/clientInfo"] == nil {
		t.Fatalf("modern: %+v", got)
	}
	if err := json.Unmarshal(u.withMeta(nil), &got); err != nil || string(got.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` {
		t.Fatalf("modern, no params: %v %+v", err, got)
	}
}

// input_required is read from resultType alone; a complete result is not.
func TestInputRequired_ReadsResultType(t *testing.T) {
	reqs, state, ok := inputRequired(json.RawMessage(`{"resultType":"input_required","inputRequests":{"c":{"method":"elicitation/create","params":{"message":"m"}}},"requestState":"s1"}`))
	if !ok || len(reqs) != 1 || string(state) != `"s1"` {
		t.Fatalf("input_required: %v %s %v", reqs, state, ok)
	}
	for _, res := range []string{`{"content":[]}`, `{"resultType":"complete","content":[],"inputRequests":{}}`, `not json`} {
		if _, _, ok := inputRequired(json.RawMessage(res)); ok {
			t.Fatalf("%s read as input_required", res)
		}
	}
}
