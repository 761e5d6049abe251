package upstream

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzReadMessageReadsAsEncodingJSON holds readMessage's one-pass reading
// of an upstream's line to encoding/json's: the same fields, or the same
// refusal, for any bytes.
func FuzzReadMessageReadsAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"g-1","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":"g-2","error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":null,"result":null}`, `{"JSONRPC":"2.0"}`, `{"method":1}`,
		`{"jsonrpc":"2.\u0030","method":"a\/b"}`, `{"id":"g-1","id":"g-2"}`, `[]`, `{"result":{}} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, gerr := readMessage(line)
		var want message
		werr := json.Unmarshal(line, &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: readMessage error %v, encoding/json %v", line, gerr, werr)
		}
		if werr != nil {
			return
		}
		if got.JSONRPC != want.JSONRPC || got.Method != want.Method || string(got.ID) != string(want.ID) ||
			string(got.Params) != string(want.Params) || string(got.Result) != string(want.Result) ||
			(got.ID == nil) != (want.ID == nil) || (got.Params == nil) != (want.Params == nil) ||
			(got.Result == nil) != (want.Result == nil) || !reflect.DeepEqual(got.Error, want.Error) {
			t.Fatalf("%q:\nreadMessage %+v\nencoding/json %+v", line, got, want)
		}
	})
}

// TestReadMessageOwnsItsBytes: the line's buffer is the reader's to reuse;
// a message keeps its own copy.
func TestReadMessageOwnsItsBytes(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":"g-1","result":{"content":[]}}`)
	m, err := readMessage(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = ' '
	}
	if string(m.ID) != `"g-1"` || string(m.Result) != `{"content":[]}` {
		t.Fatalf("after the line's buffer was reused: id %s, result %s", m.ID, m.Result)
	}
}
