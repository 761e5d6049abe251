package canon

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

type sample struct {
	Path string            `json:"path"`
	Mode string            `json:"mode,omitempty"`
	N    float64           `json:"n"`
	Tags []string          `json:"tags"`
	Meta map[string]string `json:"meta,omitempty"`
	Big  int64             `json:"big,omitempty"`
	Raw  json.RawMessage   `json:"raw,omitempty"`
}

func TestMarshalAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, "null"},
		{"bool", true, "true"},
		{"string", "a\u2028\x01/é", "\"a\u2028\\u0001/é\""},
		{"number", json.Number("1.50"), "1.5"},
		{"negative zero number", json.Number("-0"), "0"},
		{"int", 42, "42"},
		{"int64 2^53", int64(1 << 53), "9007199254740992"},
		{"int64 -2^53", int64(-1 << 53), "-9007199254740992"},
		{"uint64 2^53", uint64(1 << 53), "9007199254740992"},
		{"int8", int8(-7), "-7"},
		{"uint16", uint16(7), "7"},
		{"float64", 0.1, "0.1"},
		{"float64 negative zero", math.Copysign(0, -1), "0"},
		{"float64 1e21", 1e21, "1e+21"},
		{"float64 1e-7", 1e-7, "1e-7"},
		{"float64 max", math.MaxFloat64, "1.7976931348623157e+308"},
		{"float64 smallest", math.SmallestNonzeroFloat64, "5e-324"},
		{"raw message", json.RawMessage(` { "b":1, "a":[1.0] } `), `{"a":[1],"b":1}`},
		{"map any", map[string]any{"b": 1, "a": []any{"x", nil, false}, "\U0001F600": 1, "\ufb33": 2},
			"{\"a\":[\"x\",null,false],\"b\":1,\"\U0001F600\":1,\"\ufb33\":2}"},
		{"map string", map[string]string{"z": "1", "y": "\\"}, `{"y":"\\","z":"1"}`},
		{"slice any", []any{json.Number("1e2"), "s", map[string]any{}}, `[100,"s",{}]`},
		{"slice string", []string{"b", "a"}, `["b","a"]`},
		{"empty slice", []any{}, `[]`},
		{"nil map", map[string]any(nil), `null`},
		{"nil slice", []string(nil), `null`},
		{"struct via encoding/json",
			sample{Path: "/tmp/<x>&", N: 1, Tags: []string{"t"}, Meta: map[string]string{"b": "2", "a": "1"}, Big: 1 << 53, Raw: json.RawMessage(`{"y":2,"x":1}`)},
			`{"big":9007199254740992,"meta":{"a":"1","b":"2"},"n":1,"path":"/tmp/<x>&","raw":{"x":1,"y":2},"tags":["t"]}`},
		{"struct inside map", map[string]any{"s": sample{Path: "p"}}, `{"s":{"n":0,"path":"p","tags":null}}`},
		{"pointer", &sample{Path: "p"}, `{"n":0,"path":"p","tags":null}`},
		{"valid U+FFFD is not a substitution", map[string]any{"k": sample{Path: "\uFFFD"}}, "{\"k\":{\"n\":0,\"path\":\"\uFFFD\",\"tags\":null}}"},
		{"escaped backslash-ufffd text is fine", sample{Path: `\ufffd`}, `{"n":0,"path":"\\ufffd","tags":null}`},
		{"int map via encoding/json", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Marshal(tc.v)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if err := Check(got); err != nil {
				t.Fatalf("output fails Check: %v", err)
			}
		})
	}
}

// nestedMap wraps v in n single-member maps.
func nestedMap(n int, v any) any {
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

type badUTF8Marshaler struct{}

func (badUTF8Marshaler) MarshalJSON() ([]byte, error) { return []byte("\"\xff\""), nil }

type dupMarshaler struct{}

func (dupMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"a":1,"a":2}`), nil }

func TestMarshalRefuses(t *testing.T) {
	cyclic := []any{nil}
	cyclic[0] = cyclic
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap

	for _, tc := range []struct {
		name    string
		v       any
		reason  string
		pointer string
	}{
		{"NaN", math.NaN(), "NaN", ""},
		{"+Inf", math.Inf(1), "+Inf", ""},
		{"-Inf nested", map[string]any{"a": []any{1, math.Inf(-1)}}, "-Inf", "/a/1"},
		{"int64 2^53+1", int64(1<<53 + 1), "beyond ±2^53", ""},
		{"int64 -2^53-1", int64(-1<<53 - 1), "beyond ±2^53", ""},
		{"int 2^53+1", int(1<<53 + 1), "beyond ±2^53", ""},
		{"uint64 2^53+1", uint64(1<<53 + 1), "beyond 2^53", ""},
		{"uint64 max", uint64(math.MaxUint64), "beyond 2^53", ""},
		{"invalid UTF-8 string", "a\xffb", "not valid UTF-8", ""},
		{"invalid UTF-8 in []string", []string{"ok", "\xc0\xaf"}, "not valid UTF-8", "/1"},
		{"invalid UTF-8 in map[string]string value", map[string]string{"k": "\xed\xa0\x80"}, "not valid UTF-8", "/k"},
		{"invalid UTF-8 in key", map[string]any{"a\xff": 1}, "object member name", "/a\uFFFD"},
		{"invalid UTF-8 in struct field (encoding/json would substitute)", sample{Path: "\xff"}, "U+FFFD", ""},
		{"invalid UTF-8 in struct map key", sample{Meta: map[string]string{"\xff": "x"}}, "U+FFFD", ""},
		{"invalid UTF-8 from MarshalJSON", badUTF8Marshaler{}, "invalid UTF-8", ""},
		{"duplicate from MarshalJSON", map[string]any{"m": dupMarshaler{}}, "duplicate object member name", "/m"},
		{"NaN in struct", struct{ F float64 }{math.NaN()}, "unsupported value", ""},
		{"struct int beyond 2^53 not exact", struct{ N int64 }{1<<53 + 1}, "send it as a string", "/N"},
		{"struct int 2^60: its canonical form 1152921504606847000 differs", map[string]any{"s": sample{Big: 1 << 60}}, "would be 1152921504606847000", "/s/big"},
		{"raw message with a bad number inside", map[string]any{"r": json.RawMessage(`{"x":[1e400]}`)}, "out of range", "/r/x/0"},
		{"raw message fails Check", json.RawMessage(`{"a":1,"\u0061":2}`), "duplicate object member name", ""},
		{"raw message empty", json.RawMessage{}, "empty input", ""},
		{"raw message nil", json.RawMessage(nil), "empty input", ""},
		{"raw message trailing data", map[string]any{"r": json.RawMessage(`1,2`)}, "unexpected data", "/r"},
		{"raw message invalid UTF-8", json.RawMessage("\"\xff\""), "invalid UTF-8", ""},
		{"number not JSON", json.Number("0x10"), "not a JSON number", ""},
		{"number empty", json.Number(""), "not a JSON number", ""},
		{"number injection", []any{json.Number("1,2")}, "not a JSON number", "/0"},
		{"number NaN", json.Number("NaN"), "not a JSON number", ""},
		{"number not exact", json.Number("9007199254740993"), "send it as a string", ""},
		{"number overflow", json.Number("1e400"), "out of range", ""},
		{"cycle in slice", cyclic, "nesting deeper than 256", strings.Repeat("/0", MaxDepth)},
		{"cycle in map", cyclicMap, "nesting deeper than 256", strings.Repeat("/self", MaxDepth)},
		{"unsupported type", map[string]any{"c": make(chan int)}, "unsupported type", "/c"},
		{"raw message nested past MaxDepth under a map", nestedMap(MaxDepth-100, json.RawMessage(strings.Repeat("[", 101)+strings.Repeat("]", 101))), "nesting", strings.Repeat("/a", MaxDepth-100) + strings.Repeat("/0", 100)},
		{"pointer escaping", map[string]any{"a/b~c": math.NaN()}, "NaN", "/a~1b~0c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Marshal(tc.v)
			if err == nil {
				t.Fatalf("Marshal accepted: %s", got)
			}
			if got != nil {
				t.Errorf("Marshal returned bytes with an error: %q", got)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T: %v", err, err)
			}
			if !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", e.Reason, tc.reason)
			}
			if e.Pointer != tc.pointer {
				t.Errorf("pointer %q, want %q", e.Pointer, tc.pointer)
			}
			if e.Offset != -1 {
				t.Errorf("offset %d, want -1", e.Offset)
			}
		})
	}
}

func TestMarshalDecodedRoundTrip(t *testing.T) {
	in := []byte(`{"z":[1.0,-0,"\u00e9",{"q":null,"p":true}],"a":{"":"","\/":"\\"},"n":1e-7}`)
	v, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Canonical(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(m) != string(c) {
		t.Fatalf("Marshal(Decode) %s != Canonical %s", m, c)
	}
}
