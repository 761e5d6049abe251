package canon

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// toObject gives v with every map[string]any in it as an Object whose
// members are in the reverse of name order, so Marshal has to sort them.
func toObject(v any) any {
	switch v := v.(type) {
	case map[string]any:
		o := make(Object, 0, len(v))
		for k, e := range v {
			o = append(o, Member{k, toObject(e)})
		}
		slices.SortFunc(o, func(x, y Member) int { return strings.Compare(y.Name, x.Name) })
		return o
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = toObject(e)
		}
		return out
	}
	return v
}

// FuzzObjectMarshalsAsMap: an Object is written as the map of the same
// members is, byte for byte, and refused where the map is refused.
func FuzzObjectMarshalsAsMap(f *testing.F) {
	f.Add("k", "v", int64(1), []byte(`{"b":1,"a":[true,null,{"z":{},"y":[]}]}`))
	f.Add("\u00e9", "\x7f\u0000\"\\", int64(-9007199254740992), []byte(`{"\u00e9":1,"e":2,"\ud83d\ude00":3}`))
	f.Add("a\xff", "v", int64(1)<<60, []byte(`[1.0,1e2,-0]`))
	f.Fuzz(func(t *testing.T, key, val string, n int64, raw []byte) {
		m := map[string]any{key: val, "n": n, "arr": []any{nil, true, map[string]any{key: n}}}
		if d, err := Decode(raw); err == nil {
			m["decoded"] = d
		}
		if Check(raw) == nil {
			m["raw"] = json.RawMessage(raw)
		}
		want, werr := Marshal(m)
		got, gerr := Marshal(toObject(m))
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("Object wrote %q (%v), the map %q (%v)", got, gerr, want, werr)
		}
		if werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("Object refused with %v, the map with %v", gerr, werr)
		}
	})
}

func TestObjectRefusesDuplicateNames(t *testing.T) {
	_, err := Marshal(Object{{"a", 1}, {"b", 2}, {"a", 3}})
	if err == nil || !strings.Contains(err.Error(), `duplicate object member name "a"`) {
		t.Fatalf("Marshal of a repeated name: %v, want a refusal naming it", err)
	}
	if b, err := Marshal(Object(nil)); err != nil || string(b) != "null" {
		t.Fatalf("nil Object: %s %v", b, err)
	}
	if b, err := Marshal(Object{}); err != nil || string(b) != "{}" {
		t.Fatalf("empty Object: %s %v", b, err)
	}
}
