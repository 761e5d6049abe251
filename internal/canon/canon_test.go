package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSameArgumentsSameBytes(t *testing.T) {
	a := []byte(`{"path":"/tmp/x","mode":"append","n":1.0}`)
	b := []byte(`{ "n":1, "mode":"\u0061ppend", "path":"\/tmp\/x" }`)
	ca, err := Canonical(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"mode":"append","n":1,"path":"/tmp/x"}`
	if string(ca) != want || string(cb) != want {
		t.Fatalf("got %s and %s, want %s", ca, cb, want)
	}
	da, _ := Digest(a)
	db, _ := Digest(b)
	if da != db || da != sha256Hex([]byte(want)) {
		t.Fatalf("digests %s %s", da, db)
	}
}

func nested(open, close string, n int, inner string) []byte {
	return []byte(strings.Repeat(open, n) + inner + strings.Repeat(close, n))
}

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		name        string
		open, close string
		inner       string
	}{
		{"arrays", "[", "]", ""},
		{"objects", `{"a":`, "}", "1"},
		{"mixed", `[{"a":`, "}]", "1"}, // two levels per repeat
	} {
		t.Run(tc.name, func(t *testing.T) {
			per := 1
			if tc.name == "mixed" {
				per = 2
			}
			ok := nested(tc.open, tc.close, MaxDepth/per, tc.inner)
			if err := Check(ok); err != nil {
				t.Fatalf("depth %d refused: %v", MaxDepth, err)
			}
			c, err := Canonical(ok)
			if err != nil {
				t.Fatalf("Canonical at depth %d: %v", MaxDepth, err)
			}
			v, err := Decode(ok)
			if err != nil {
				t.Fatalf("Decode at depth %d: %v", MaxDepth, err)
			}
			m, err := Marshal(v)
			if err != nil || !bytes.Equal(m, c) {
				t.Fatalf("Marshal at depth %d: %v", MaxDepth, err)
			}

			// One level more.
			deep := []byte(tc.open + string(ok) + tc.close)
			if tc.name == "mixed" {
				deep = []byte("[" + string(ok) + "]")
			}
			err = Check(deep)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Reason, "nesting deeper than 256") {
				t.Fatalf("depth %d: got %v", MaxDepth+1, err)
			}
			if deep[e.Offset] != '[' && deep[e.Offset] != '{' {
				t.Errorf("offset %d points at %q, want the 257th opening", e.Offset, deep[e.Offset])
			}
			if strings.Count(e.Pointer, "/") != MaxDepth {
				t.Errorf("pointer %q should have %d tokens", e.Pointer, MaxDepth)
			}
			if _, err := Marshal([]any{v}); err == nil || !strings.Contains(err.Error(), "nesting deeper") {
				t.Fatalf("Marshal at depth %d: %v", MaxDepth+1, err)
			}
		})
	}
	// Very deep input is refused early, not after building it.
	huge := nested("[", "]", 1_000_000, "")
	if err := Check(huge); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Fatalf("1e6 levels: %v", err)
	}
}

func TestLargeString(t *testing.T) {
	s := strings.Repeat("aé\u20ac\U0001F600\"\\/\n", (1<<20)/16)
	raw, err := json.Marshal(map[string]string{"big": s})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 1<<20 {
		t.Fatalf("input only %d bytes", len(raw))
	}
	c, err := Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if v.(map[string]any)["big"] != s {
		t.Fatal("Decode changed the string")
	}
	m, err := Marshal(map[string]any{"big": s})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m, c) {
		t.Fatal("Marshal and Canonical differ on a 1 MiB string")
	}
	var back map[string]string
	if err := json.Unmarshal(c, &back); err != nil || back["big"] != s {
		t.Fatalf("canonical form does not decode to the same string: %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	err := Check([]byte(`{"a":[{"k":1,"k":2}]}`))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v", err, err)
	}
	if e.Pointer != "/a/0" || e.Offset != 13 || e.Reason != `duplicate object member name "k"` {
		t.Fatalf("got %+v", e)
	}
	if got, want := e.Error(), `json: at /a/0 (byte 13): duplicate object member name "k"`; got != want {
		t.Fatalf("Error() = %s, want %s", got, want)
	}
	if got, want := (&Error{Offset: 0, Reason: "empty input"}).Error(), "json: at root (byte 0): empty input"; got != want {
		t.Fatalf("Error() = %s, want %s", got, want)
	}
	if got, want := (&Error{Offset: -1, Pointer: "/x", Reason: "r"}).Error(), "json: at /x: r"; got != want {
		t.Fatalf("Error() = %s, want %s", got, want)
	}

	err = Check([]byte(`{"a":[1,{"b~/":9007199254740993}]}`))
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v", err, err)
	}
	if e.Pointer != "/a/1/b~0~1" || e.Offset != 15 || !strings.Contains(e.Reason, "9007199254740993") {
		t.Fatalf("got %+v", e)
	}
}

func TestDecodeTypes(t *testing.T) {
	v, err := Decode([]byte(` {"s":"x\u0041","n":1.50,"i":-0,"t":true,"f":false,"z":null,"a":[],"o":{},"e":1E+2} `))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"s": "xA", "n": json.Number("1.50"), "i": json.Number("-0"), "t": true, "f": false, "z": nil,
		"a": []any{}, "o": map[string]any{}, "e": json.Number("1E+2"),
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
	for _, in := range []string{"null", "true", "false", `"s"`, "0"} {
		v, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var std any
		d := json.NewDecoder(strings.NewReader(in))
		d.UseNumber()
		if err := d.Decode(&std); err != nil || !reflect.DeepEqual(v, std) {
			t.Fatalf("%s: got %#v, stdlib %#v", in, v, std)
		}
	}
}

func TestCanonicalDoesNotAlias(t *testing.T) {
	in := []byte(`{"b":1,"a":2}`)
	orig := bytes.Clone(in)
	c, err := Canonical(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, orig) {
		t.Fatal("Canonical modified its input")
	}
	c[0] = 'X'
	if !bytes.Equal(in, orig) {
		t.Fatal("Canonical result aliases its input")
	}
	same := []byte(`{"a":1}`)
	c, _ = Canonical(same)
	c[0] = 'X'
	if same[0] != '{' {
		t.Fatal("Canonical result aliases already-canonical input")
	}
}

// Hostile numbers are refused (or accepted) cheaply: the comparison is
// linear in the literal, never 10^exponent. The work is measured in bytes
// allocated, not time, which a loaded machine stretches (speed is
// BenchmarkCheckHostileNumber's). Today a case allocates at most about 3
// times its length; working the value out exactly (big.Rat) allocates
// 2.4 GB for each 1 MiB literal.
func TestHostileNumbersAreFast(t *testing.T) {
	cases := map[string]bool{ // input -> accepted
		"1e999999999":   false,
		"-1e-999999999": false,
		"0e999999999999999999999999999999999999999":                          true,
		"1" + strings.Repeat("0", 1<<20):                                     false, // 10^(2^20): out of range
		"1." + strings.Repeat("0", 1<<20):                                    true,  // 1.000…: exactly 1
		"0." + strings.Repeat("0", 1<<20) + "1":                              false, // underflow
		"1." + strings.Repeat("0", 1<<20) + "1":                              false, // 1 + 10^-(2^20+1): not exact
		"0." + strings.Repeat("0", 1<<20) + "1e1048577":                      true,  // exactly 1
		"0." + strings.Repeat("0", 1<<20) + "15e1048580":                     true,  // exactly 1500
		"0." + strings.Repeat("0", 1<<20) + "1000000000000000000001e1048577": false, // 1.000000000000000000001
		"-0." + strings.Repeat("0", 1<<20) + "1000000000000001e1048267":      false, // -1.000000000000001e-310: subnormal, not exact
		"-0." + strings.Repeat("0", 1<<20) + "5e1048254":                     true,  // -5e-324
		"1e99999999999999999999999999999999999999":                           false,
		"1" + strings.Repeat("0", 300) + "e-300":                             true,
		"1" + strings.Repeat("0", 400) + "e-400":                             true,
	}
	for in, accepted := range cases {
		raw := []byte(in)
		var err error
		used := allocated(func() { err = Check(raw) })
		if (err == nil) != accepted {
			t.Errorf("%.40q...: accepted=%v, want %v (%v)", in, err == nil, accepted, err)
		}
		if err != nil && !strings.Contains(err.Error(), "...(") && len(in) > 100 {
			t.Errorf("long literal not shortened in message: %.200s", err)
		}
		t.Logf("%.40q... (%d bytes): %d bytes allocated", in, len(in), used)
		if bound := 8*uint64(len(in)) + 64<<10; used > bound {
			t.Errorf("%.40q... (%d bytes) allocated %d bytes, over %d: the check is not linear in the literal", in, len(in), used, bound)
		}
	}
}

// Unique refuses duplicate names and text that is not UTF-8, but not the
// numbers Check refuses.
func TestUnique(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"id":9007199254740993,"n":1e400}`: true,
		`{"a":{"b":1},"c":[{"b":2}]}`:       true,
		`{"a":1,"a":2}`:                     false,
		`{"a":{"b":1,"b":1}}`:               false,
		"{\"a\":\"\xff\"}":                  false,
		`{"a":"\ud800"}`:                    false,
		`{"a":1`:                            false,
	} {
		if got := Unique([]byte(raw)); got != want {
			t.Errorf("Unique(%s) = %v, want %v", raw, got, want)
		}
	}
}
