package canon

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFoldCollision(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"path":1,"paths":2,"a":{"b":[{"c":1,"d":2}]}}`, ""},
		{`{"x":[{"y":1},{"Y":1}]}`, ""}, // different objects
		{`{"path":1,"PATH":2}`, `json: at root: member names "PATH" and "path" differ only in case`},
		{`{"a":{"b":[0,{"kind":1,"` + "\u212a" + `ind":2}]}}`, `json: at /a/b/1: member names`},
		{`{"m~/":{"s":1,"` + "\u017f" + `":2}}`, `json: at /m~0~1: member names`},
	} {
		v, err := Decode([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		e := FoldCollision(v)
		switch {
		case tc.want == "" && e != nil:
			t.Errorf("%s: %v", tc.doc, e)
		case tc.want != "" && (e == nil || !strings.HasPrefix(e.Error(), tc.want)):
			t.Errorf("%s: got %v; want %q", tc.doc, e, tc.want)
		}
	}
}

// FoldKey groups names exactly as bytes.EqualFold (and so encoding/json)
// does.
func FuzzFoldKey(f *testing.F) {
	for _, s := range [][2]string{{"path", "PATH"}, {"k", "\u212a"}, {"s", "\u017f"}, {"ß", "ẞ"}, {"σ", "ς"}, {"a", "b"}, {"İ", "i"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			t.Skip()
		}
		if got, want := FoldKey(a) == FoldKey(b), bytes.EqualFold([]byte(a), []byte(b)); got != want {
			t.Fatalf("%q %q: same key %v, EqualFold %v", a, b, got, want)
		}
	})
}
