package canon

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"
)

func addSeeds(f *testing.F) {
	for _, v := range loadGolden(f) {
		f.Add([]byte(v.Input))
		f.Add([]byte(v.Canonical))
	}
	for _, v := range loadRefused(f) {
		f.Add(v.bytes(f))
	}
	for _, s := range []string{
		`{"a":{"b":[1,2,{"c":"\ud83d\ude00"}]},"d":-0.0e0}`,
		`[1e308,1e-308,5e-324,0.1,1.5e300,123456789012345678]`,
		`{"\u0000":"\u001f","\u007f":"\u0080"}`,
		"{\"\xe2\x80\xa8\":\"\xf0\x9f\x98\x80\"}",
	} {
		f.Add([]byte(s))
	}
}

// FuzzCheck: Check never panics, and whatever it accepts canonicalizes,
// idempotently, to text Check accepts, which Decode+Marshal reproduces.
func FuzzCheck(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		orig := bytes.Clone(raw)
		err := Check(raw)
		if !bytes.Equal(raw, orig) {
			t.Fatal("Check modified its input")
		}
		v, derr := Decode(raw)
		if (err == nil) != (derr == nil) {
			t.Fatalf("Check and Decode disagree: %v / %v", err, derr)
		}
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %T", err)
			}
			if e.Offset < 0 || e.Offset > int64(len(raw)) || e.Reason == "" {
				t.Fatalf("bad error %+v", e)
			}
			if _, cerr := Canonical(raw); cerr == nil {
				t.Fatal("Canonical accepted what Check refused")
			}
			return
		}
		c, err := Canonical(raw)
		if err != nil {
			t.Fatalf("Check accepted but Canonical failed: %v", err)
		}
		if err := Check(c); err != nil {
			t.Fatalf("canonical form %q fails Check: %v", c, err)
		}
		c2, err := Canonical(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent: %q -> %q (%v)", c, c2, err)
		}
		if err := checkCanonicalShape(c); err != "" {
			t.Fatalf("canonical form %q: %s", c, err)
		}
		m, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(Decode(x)): %v", err)
		}
		if !bytes.Equal(m, c) {
			t.Fatalf("Marshal(Decode(x)) = %q, Canonical(x) = %q", m, c)
		}
		d, err := Digest(raw)
		if err != nil || d != sha256Hex(c) {
			t.Fatalf("Digest %s, %v", d, err)
		}
	})
}

// FuzzCanonicalAgreesWithStdlib: whatever Check accepts, encoding/json
// accepts too, with the same value (numbers kept as literals, so equal up to
// formatting), and the canonical form decodes to the same value as well.
func FuzzCanonicalAgreesWithStdlib(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if Check(raw) != nil {
			return
		}
		ours, err := Decode(raw)
		if err != nil {
			t.Fatalf("Check accepted but Decode refused: %v", err)
		}
		std, err := stdDecode(raw)
		if err != nil {
			t.Fatalf("Check accepted %q but encoding/json refused: %v", raw, err)
		}
		if !equalModuloNumbers(ours, std) {
			t.Fatalf("values differ:\nours %#v\nstd  %#v", ours, std)
		}
		c, err := Canonical(raw)
		if err != nil {
			t.Fatal(err)
		}
		stdc, err := stdDecode(c)
		if err != nil {
			t.Fatalf("encoding/json refused the canonical form %q: %v", c, err)
		}
		if !equalModuloNumbers(std, stdc) {
			t.Fatalf("canonical form changed the value:\nbefore %#v\nafter  %#v", std, stdc)
		}
		m, err := Marshal(std)
		if err != nil || !bytes.Equal(m, c) {
			t.Fatalf("Marshal(stdlib value) = %q, %v; Canonical = %q", m, err, c)
		}
	})
}

// checkCanonicalShape independently checks properties of canonical text:
// no whitespace outside strings, and object member names strictly
// increasing in UTF-16 code-unit order (RFC 8785 section 3.2.3).
func checkCanonicalShape(c []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(c))
	type obj struct {
		isObj    bool
		last     []uint16
		has      bool
		wantName bool
	}
	var stack []obj
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err.Error()
		}
		switch tok.Kind() {
		case '{':
			stack = append(stack, obj{isObj: true, wantName: true})
			continue
		case '[':
			stack = append(stack, obj{})
			continue
		case '}', ']':
			stack = stack[:len(stack)-1]
		case '"':
			if n := len(stack); n > 0 && stack[n-1].wantName {
				name := utf16.Encode([]rune(tok.String()))
				if stack[n-1].has && slices.Compare(stack[n-1].last, name) >= 0 {
					return "member names out of UTF-16 order at " + strconv.Quote(tok.String())
				}
				stack[n-1].last, stack[n-1].has, stack[n-1].wantName = name, true, false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].isObj {
			stack[n-1].wantName = true
		}
	}
	inString := false
	for i := 0; i < len(c); i++ {
		switch {
		case inString && c[i] == '\\':
			i++
		case c[i] == '"':
			inString = !inString
		case !inString && isSpace(c[i]):
			return "whitespace outside a string"
		}
	}
	return ""
}

func stdDecode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// equalModuloNumbers compares decoded values, treating two json.Numbers as
// equal when they denote the same decimal value (checked via the canonical
// text of each, which the number rule makes exact).
func equalModuloNumbers(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == b {
			return true
		}
		ca, err1 := Canonical([]byte(a))
		cb, err2 := Canonical([]byte(b))
		return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equalModuloNumbers(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalModuloNumbers(a[i], b[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}

func TestCheckCanonicalShape(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":{"c":1,"b":2}}`:           "out of UTF-16 order",
		`{"\ufb33":1,"\ud83d\ude00":2}`: "out of UTF-16 order",
		`{"":1,"a":[{"x":1,"y":{}}]}`:   "",
		`[1, 2]`:                        "whitespace",
		`{"a":1,"a":1}`:                 "duplicate",
	} {
		if got := checkCanonicalShape([]byte(in)); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}

func TestEqualModuloNumbers(t *testing.T) {
	if !equalModuloNumbers(map[string]any{"a": json.Number("1.0")}, map[string]any{"a": json.Number("1")}) {
		t.Error("1.0 and 1 should be equal")
	}
	if equalModuloNumbers([]any{json.Number("1")}, []any{json.Number("2")}) {
		t.Error("1 and 2 should differ")
	}
	if equalModuloNumbers([]any{"1"}, []any{json.Number("1")}) {
		t.Error("string and number should differ")
	}
}

// BenchmarkCanonical: a typical ~150-byte tool-arguments object.
func BenchmarkCanonical(b *testing.B) {
	raw := []byte(`{"path": "/home/user/project/src/main.go", "mode": "append", "content": "fmt.Println(\"hi\")\n", "line": 42, "create": true, "tags": ["a", "b"]}`)
	if n := len(raw); n < 130 || n > 170 {
		b.Fatalf("sample is %d bytes", n)
	}
	if _, err := Canonical(raw); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckLargeString(b *testing.B) {
	raw := []byte(`{"s":"` + strings.Repeat("abcdefgh", 1<<17) + `"}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzMarshalExact: what Marshal writes without its final canonicalizing
// pass (strings, integers, ASCII member names, canonicalized raw messages)
// is already canonical: canonicalizing it again changes nothing.
func FuzzMarshalExact(f *testing.F) {
	f.Add("k", "v", int64(1), []byte(`{"b":1,"a":[true,null]}`))
	f.Add("\u2028", "\x7f\u0000\u001f\"\\/<>&\u2029\ufeff", int64(-9007199254740992), []byte(`"\u00e9\ud83d\ude00"`))
	f.Add("zz", "\U0001F600\uE000", int64(9007199254740992), []byte(`[1.0,1e2,-0]`))
	f.Fuzz(func(t *testing.T, key, val string, n int64, raw []byte) {
		v := map[string]any{
			key:   val,
			"n":   n,
			"s":   []string{val, key},
			"m":   map[string]string{key: val, "a": val},
			"arr": []any{nil, true, false, val, map[string]any{}},
		}
		if Check(raw) == nil {
			v["raw"] = json.RawMessage(raw)
		}
		out, err := Marshal(v)
		if err != nil {
			return // invalid UTF-8, an integer beyond 2^53: refused, as documented
		}
		// The same document with raw already hashed encodes to the same bytes.
		if d, err := DigestOf(raw); err == nil {
			v["raw"] = d
			if out2, err := Marshal(v); err != nil || !bytes.Equal(out2, out) {
				t.Fatalf("with raw as Digested, Marshal wrote %q (%v), want %q", out2, err, out)
			}
		}
		c, err := canonicalize(out)
		if err != nil {
			t.Fatalf("Marshal wrote %q, which does not canonicalize: %v", out, err)
		}
		if !bytes.Equal(c, out) {
			t.Fatalf("Marshal wrote %q, canonical form is %q", out, c)
		}
	})
}

// BenchmarkCheckHostileNumber: a 1 MiB number literal that is exactly 1
// (0.000…1e1048577). TestHostileNumbersAreFast bounds its work in bytes;
// this measures its speed.
func BenchmarkCheckHostileNumber(b *testing.B) {
	raw := []byte("0." + strings.Repeat("0", 1<<20) + "1e1048577")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(raw); err != nil {
			b.Fatal(err)
		}
	}
}
