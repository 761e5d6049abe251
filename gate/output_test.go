package gate

import (
	"encoding/json"
	"testing"
)

// FuzzResultIsErrorReadsAsEncodingJSON holds resultIsError's one-pass
// reading to encoding/json's: the isError a call's outcome records is the
// one mcp-go and the host read, for any bytes an upstream sends.
func FuzzResultIsErrorReadsAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":[],"isError":true}`, `{"content":[],"isError":false}`, `{"isError":null}`,
		`{"IsError":true}`, `{"isError":"true"}`, `{"isError":1}`, `{"isError":true,"isError":false}`,
		`{"i\u017fError":true}`, `{"isError":true} x`, `[true]`, `{"isError":tru}`, "{\"isError\":true,\"x\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, res []byte) {
		var r struct {
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(res, &r)
		if got := resultIsError(res); got != r.IsError {
			t.Fatalf("resultIsError(%q) = %v, encoding/json reads %v", res, got, r.IsError)
		}
	})
}
