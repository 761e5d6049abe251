package classify

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		s      string
		ok     bool
		neg    bool
		digits string
		exp    int64
	}{
		{"0", true, false, "", 0},
		{"-0", true, false, "", 0},
		{"0.000", true, false, "", 0},
		{"-0e5", true, false, "", 0},
		{"1", true, false, "1", 0},
		{"1.0", true, false, "1", 0},
		{"1e0", true, false, "1", 0},
		{"10", true, false, "1", 1},
		{"10e-1", true, false, "1", 0},
		{"0.1e1", true, false, "1", 0},
		{"100E-2", true, false, "1", 0},
		{"1E+2", true, false, "1", 2},
		{"-12.3400", true, true, "1234", -2},
		{"0.001", true, false, "1", -3},
		{"9007199254740993", true, false, "9007199254740993", 0},
		{"", false, false, "", 0},
		{"-", false, false, "", 0},
		{"+1", false, false, "", 0},
		{"01", false, false, "", 0},
		{".5", false, false, "", 0},
		{"1.", false, false, "", 0},
		{"1e", false, false, "", 0},
		{"1e+", false, false, "", 0},
		{"0x10", false, false, "", 0},
		{"1/2", false, false, "", 0},
		{"Infinity", false, false, "", 0},
		{"NaN", false, false, "", 0},
		{"1 ", false, false, "", 0},
		{" 1", false, false, "", 0},
		{"1_000", false, false, "", 0},
	}
	if d, ok := parseDecimal("1e999999999999999999999"); !ok || d.digits != "1" || d.exp < 1e15 {
		t.Errorf("huge exponent: %+v %v, want saturated", d, ok)
	}
	if d, ok := parseDecimal("-1e-999999999999999999999"); !ok || !d.neg || d.exp > -1e15 {
		t.Errorf("huge negative exponent: %+v %v, want saturated", d, ok)
	}
	for _, tt := range tests {
		d, ok := parseDecimal(tt.s)
		if ok != tt.ok {
			t.Errorf("parseDecimal(%q) ok = %v, want %v", tt.s, ok, tt.ok)
			continue
		}
		if ok && (d != decimal{tt.neg, tt.digits, tt.exp}) {
			t.Errorf("parseDecimal(%q) = %+v, want {%v %q %d}", tt.s, d, tt.neg, tt.digits, tt.exp)
		}
	}
}

func TestNumberEquality(t *testing.T) {
	tests := []struct {
		arg    string // JSON text of the argument
		equals any    // the TOML value
		want   bool
	}{
		{"1", int64(1), true},
		{"1.0", int64(1), true},
		{"1.000000000000000000000000000000", int64(1), true},
		{"1e0", int64(1), true},
		{"10e-1", int64(1), true},
		{"0.1e1", int64(1), true},
		{"1", float64(1), true},
		{"1.0", float64(1), true},
		{"2", int64(1), false},
		{"1.0000000000000000001", int64(1), false}, // would round to 1.0 as a float64
		{"0.9999999999999999999", int64(1), false},
		{"-1", int64(1), false},
		{"-1", int64(-1), true},
		{"0", int64(0), true},
		{"-0", int64(0), true},
		{"-0.0", float64(0), true},
		{"0", math.Copysign(0, -1), true},
		{"9007199254740993", int64(9007199254740992), false},
		{"9007199254740992", int64(9007199254740992), true},
		{"9007199254740993", int64(9007199254740993), true},
		{"9007199254740993", float64(9007199254740992), false},
		{"9007199254740992", float64(9007199254740992), true},
		{"9223372036854775807", int64(math.MaxInt64), true},
		{"9223372036854775808", int64(math.MaxInt64), false},
		{"9.223372036854775807e18", int64(math.MaxInt64), true},
		{"-9223372036854775808", int64(math.MinInt64), true},
		{"18446744073709551617", int64(1), false}, // 2^64+1 wraps to 1 in uint64 arithmetic
		{"0.1", 0.1, true},
		{"0.10", 0.1, true},
		{"1e-1", 0.1, true},
		{"0.10000000000000001", 0.1, false},    // same float64, different number
		{"0.1", math.Nextafter(0.1, 1), false}, // 0.10000000000000002
		{"1.5", 1.5, true},
		{"15e-1", 1.5, true},
		{"1.5000001", 1.5, false},
		{"1e300", 1e300, true},
		{"1e308", 1e308, true},
		{"1e309", 1e308, false},
		{"5e-324", 5e-324, true},
		{"1e-400", float64(0), false},
		{"1e999999999999999999999999", int64(1), false},
		{"-1e-999999999999999999999999", int64(0), false},
		{"1" + strings.Repeat("0", 100), float64(1e100), true},
		{"1" + strings.Repeat("0", 100) + "1", float64(1e100), false},
		{"1e100", float64(1e100), true},
		// types never cross
		{`"1"`, int64(1), false},
		{"1", "1", false},
		{`"true"`, true, false},
		{"true", "true", false},
		{"true", true, true},
		{"false", true, false},
		{"false", false, true},
		{"1", true, false},
		{"0", false, false},
		{"null", false, false},
		{"null", "", false},
		{"null", int64(0), false},
		{`""`, "", true},
		{`"x"`, "x", true},
		{`"x"`, "X", false},
		{`"x "`, "x", false},
		{`"é"`, "é", true},
		{`"e\u0301"`, "é", false}, // no Unicode normalisation
		{"[1]", int64(1), false},
		{`{"a":1}`, int64(1), false},
		{"[]", "", false},
		{"{}", "", false},
	}
	for _, tt := range tests {
		r := one(t, "/v", Predicate{Equals: tt.equals})
		_, got := r.Decide("s", "t", doc(t, `{"v":`+tt.arg+`}`))
		if got != tt.want {
			t.Errorf("%s equals %#v = %v, want %v", tt.arg, tt.equals, got, tt.want)
		}
	}
}

func TestNumberArgumentTypes(t *testing.T) {
	// Decide also takes arguments decoded without UseNumber, and Go ints.
	r := one(t, "/v", Predicate{Equals: int64(3)})
	for _, v := range []any{json.Number("3"), json.Number("3.0"), float64(3), int64(3), int(3)} {
		if _, ok := r.Decide("s", "t", map[string]any{"v": v}); !ok {
			t.Errorf("%T(%v) should equal 3", v, v)
		}
	}
	for _, v := range []any{json.Number("0x3"), json.Number("+3"), json.Number(""), float64(3.5), math.NaN(), math.Inf(1), int32(3), uint64(3), "3", []byte("3")} {
		if _, ok := r.Decide("s", "t", map[string]any{"v": v}); ok {
			t.Errorf("%T(%v) should not equal 3", v, v)
		}
	}
	// A float64 argument is its shortest decimal, like a float64 config value.
	r = one(t, "/v", Predicate{Equals: 0.1})
	if _, ok := r.Decide("s", "t", map[string]any{"v": 0.1}); !ok {
		t.Error("float64 0.1 should equal 0.1")
	}
}

// Hostile numbers cost work linear in their text, never 10^exponent. The
// work is measured in bytes allocated, not time, which a loaded machine
// stretches. Today a decision allocates nothing; parsing the 1 MiB
// number through big.Rat allocates 2.4 GB.
func TestNumberHostileIsCheap(t *testing.T) {
	r := one(t, "/v", Predicate{OneOf: []any{int64(1), 1.5, "x"}})
	huge := json.Number("1" + strings.Repeat("0", 1<<20) + "e-1048576")
	for _, n := range []json.Number{"1e999999999", "1e-999999999", "9e9223372036854775807", huge} {
		var ok bool
		args := map[string]any{"v": n}
		used := allocated(func() { _, ok = r.Decide("s", "t", args) })
		if ok != (n == huge) {
			t.Errorf("%.20s...: ok = %v", n, ok)
		}
		t.Logf("%.20s... (%d bytes): %d bytes allocated", n, len(n), used)
		if bound := 8*uint64(len(n)) + 64<<10; used > bound {
			t.Errorf("%.20s... (%d bytes) allocated %d bytes, over %d: the comparison is not linear in the number", n, len(n), used, bound)
		}
	}
}
