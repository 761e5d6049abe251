package canon

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	names := []string{"content", "isError", "_meta"}
	for _, tc := range []struct {
		in   string
		ok   bool
		want [3]string // "" for absent
	}{
		{`{"content":[{"type":"text","text":"hi"}],"isError":false}`, true, [3]string{`[{"type":"text","text":"hi"}]`, `false`, ``}},
		{` { "isError" : true , "_meta" : {"a":1} , "other": [1,2] } `, true, [3]string{``, `true`, `{"a":1}`}},
		{`{"content":null}`, true, [3]string{`null`, ``, ``}},
		{`{"c\u006fntent":"x"}`, true, [3]string{`"x"`, ``, ``}}, // an escaped name, as encoding/json unescapes it
		{`{}`, true, [3]string{}},
		// Declined: encoding/json would read each some way Members cannot show.
		{`{"IsError":true}`, false, [3]string{}},                 // case
		{`{"i\u017fError":true}`, false, [3]string{}},            // ſ folds to s
		{`{"isError":true,"isError":false}`, false, [3]string{}}, // repeated
		{`{"x":{"a":1,"a":2}}`, false, [3]string{}},              // repeated, deeper
		{"{\"x\":\"\xff\"}", false, [3]string{}},                 // invalid UTF-8
		{`{"x":1} {"y":2}`, false, [3]string{}},                  // trailing value
		{`{"x":1} x`, false, [3]string{}},
		{`[1]`, false, [3]string{}},
		{`{"x":1`, false, [3]string{}},
		{``, false, [3]string{}},
	} {
		got, ok := Members([]byte(tc.in), names...)
		if ok != tc.ok {
			t.Errorf("Members(%s): ok %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		for i := range names {
			if ok && string(got[i]) != tc.want[i] {
				t.Errorf("Members(%s)[%s] = %q, want %q", tc.in, names[i], got[i], tc.want[i])
			}
		}
	}
}

// FuzzMembersReadsAsEncodingJSON: whatever Members accepts, encoding/json
// decodes into a struct with those fields without error, to the same
// values (json.RawMessage keeps a value's bytes as they were).
func FuzzMembersReadsAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}],"isError":false}`,
		`{"IsError":true}`, `{"isError":1,"content":{}}`, `{"_meta":{"a":"\u00e9"}}`,
		`{"a":[1,{"b":null}],"content":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := Members(raw, "content", "isError", "_meta")
		if !ok {
			return
		}
		var want struct {
			Content json.RawMessage `json:"content"`
			IsError json.RawMessage `json:"isError"`
			Meta    json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("Members accepted %q, encoding/json refuses it: %v", raw, err)
		}
		for i, w := range []json.RawMessage{want.Content, want.IsError, want.Meta} {
			if string(got[i]) != string(w) {
				t.Fatalf("%q: member %d is %q, encoding/json reads %q", raw, i, got[i], w)
			}
		}
		if c := got[0]; len(c) > 0 && c[0] == '[' {
			els, ok := Elements(c)
			var wantEls []json.RawMessage
			if !ok || json.Unmarshal(c, &wantEls) != nil || len(els) != len(wantEls) {
				t.Fatalf("%q: Elements %v %d, encoding/json %d", c, ok, len(els), len(wantEls))
			}
			for i := range els {
				if string(els[i]) != string(wantEls[i]) {
					t.Fatalf("%q: element %d is %q, encoding/json reads %q", c, i, els[i], wantEls[i])
				}
			}
		}
	})
}

// BenchmarkMembers is an upstream's answer read by Members, against
// encoding/json reading the same members (what readMessage did before):
// a short echo and a 100 KB file's text.
func BenchmarkMembers(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		in := []byte(`{"jsonrpc":"2.0","id":"g-12","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", n) + `"}]}}`)
		b.Run("members/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, ok := Members(in, "jsonrpc", "id", "method", "params", "result", "error"); !ok {
					b.Fatal("declined")
				}
			}
		})
		b.Run("encoding-json/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var m struct {
					JSONRPC, Method    string
					ID, Params, Result json.RawMessage
				}
				if err := json.Unmarshal(in, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A decoder taken from the pool reads each message afresh: one read left
// half done (a folded name ends Members early, a repeated name is refused)
// changes nothing the next read sees, on whichever decoder it gets.
func TestMembers_ReusedDecoderReadsAfresh(t *testing.T) {
	for range 100 {
		if _, ok := Members([]byte(`{"Id":1,"id":2}`), "id"); ok {
			t.Fatal("a name folding to a wanted one was accepted")
		}
		if _, ok := Members([]byte(`{"id":1,"id":2}`), "id"); ok {
			t.Fatal("a repeated name was accepted")
		}
		v, ok := Members([]byte(`{"id":"7","x":[1]}`), "id", "x")
		if !ok || string(v[0]) != `"7"` || string(v[1]) != `[1]` {
			t.Fatalf("Members after an abandoned read = %q, %v", v, ok)
		}
		if err := Check([]byte(`{"id":1}`)); err != nil {
			t.Fatalf("Check after an abandoned read: %v", err)
		}
	}
}
