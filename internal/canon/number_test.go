package canon

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestNumberRuleAccepts(t *testing.T) {
	for in, want := range map[string]string{
		"0.1":                     "0.1",
		"1.0":                     "1",
		"1e2":                     "100",
		"-0":                      "0",
		"-0.0e-7":                 "0",
		"5e-324":                  "5e-324",
		"1.50":                    "1.5",
		"4.50":                    "4.5",
		"9007199254740992":        "9007199254740992",
		"-9007199254740992":       "-9007199254740992",
		"18014398509481984":       "18014398509481984", // 2^54 is exactly a double
		"295147905179352830000":   "295147905179352830000",
		"1e21":                    "1e+21",
		"1e-7":                    "1e-7",
		"0.000001":                "0.000001",
		"1E30":                    "1e+30",
		"1.7976931348623157e308":  "1.7976931348623157e+308",
		"123456789012345":         "123456789012345",
		"1234567890123456":        "1234567890123456",
		"100000000000000000000e0": "100000000000000000000",
		"0.30000000000000004":     "0.30000000000000004",
	} {
		if r := checkNumber([]byte(in)); r != "" {
			t.Errorf("%s refused: %s", in, r)
			continue
		}
		c, err := Canonical([]byte(in))
		if err != nil || string(c) != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", in, c, err, want)
		}
	}
}

func TestNumberRuleRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"9007199254740993":                     "would be 9007199254740992",
		"-9007199254740993":                    "would be -9007199254740992",
		"1.00000000000000001":                  "would be 1;",
		"1e400":                                "out of range",
		"-1e400":                               "out of range",
		"1e-400":                               "canonicalized as 0",
		"2.4703282292062327e-324":              "canonicalized as 0",
		"333333333.33333329":                   "would be 333333333.3333333",
		"0.1000000000000000055511151231257827": "would be 0.1",
		"1e999999999":                          "out of range",
		"1.2e-999999999":                       "canonicalized as 0",
		"18014398509481985":                    "would be 18014398509481984",
		"1.0000000000000001e23":                "", // exact: this is the canonical form
	} {
		r := checkNumber([]byte(in))
		if want == "" {
			if r != "" {
				t.Errorf("%s refused: %s", in, r)
			}
			continue
		}
		if !strings.Contains(r, want) || !strings.Contains(r, in) || !strings.Contains(r, "send it as a string") {
			t.Errorf("%s: reason %q, want it to name the literal, contain %q and suggest a string", in, r, want)
		}
	}
}

// Every double's shortest form passes the rule, in both Go spellings.
func TestNumberRuleShortestFormsPass(t *testing.T) {
	vals := []float64{0, 1, -1, 0.1, 1e21, 1e-7, math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		1 << 53, 1 << 60, 1e23, 333333333.3333333, 2.2250738585072014e-308, 2.225073858507201e-308}
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < 20000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		f := math.Float64frombits(x)
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			vals = append(vals, f)
		}
	}
	for _, f := range vals {
		for _, s := range []string{
			strconv.FormatFloat(f, 'g', -1, 64),
			strconv.FormatFloat(f, 'e', -1, 64),
			strconv.FormatFloat(f, 'f', -1, 64),
			string(formatES6(f)),
		} {
			if r := checkNumber([]byte(s)); r != "" {
				t.Fatalf("%s (%x) refused: %s", s, math.Float64bits(f), r)
			}
		}
		// One more significant digit that changes the value is refused
		// (it still rounds to f, but is not f's canonical decimal).
		e := strconv.FormatFloat(math.Abs(f), 'e', -1, 64)
		mant, exp, _ := strings.Cut(e, "e")
		if !strings.Contains(mant, ".") {
			mant += "."
		}
		longer := mant + "00000000000000000000001e" + exp
		if f != 0 {
			if r := checkNumber([]byte(longer)); r == "" {
				t.Fatalf("%s accepted", longer)
			}
		}
	}
}

func TestNormalizeLiteral(t *testing.T) {
	for in, want := range map[string]struct {
		d string
		p int64
	}{
		"0":                            {"", 0},
		"-0.000e9":                     {"", 0},
		"1":                            {"1", 1},
		"1.50":                         {"15", 1},
		"0.0015":                       {"15", -2},
		"150e-5":                       {"15", -2},
		"1.5e+00":                      {"15", 1},
		"100":                          {"1", 3},
		"12.34E2":                      {"1234", 4},
		"0.1e-2":                       {"1", -2},
		"1e" + strings.Repeat("9", 60): {"1", exponentCap + 1},
	} {
		d, p := normalizeLiteral([]byte(in))
		if string(d) != want.d || p != want.p {
			t.Errorf("normalizeLiteral(%s) = %s, %d; want %s, %d", in, d, p, want.d, want.p)
		}
	}
}

func TestIsJSONNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1.5", "1e5", "1E+5", "1e-05", "0.0", "123.456e789"} {
		if !isJSONNumber(s) {
			t.Errorf("%q should be a JSON number", s)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "1.", ".1", "1e", "1e+", "0x10", "1_000", "NaN", "Inf", " 1", "1 ", "1,2", "1]", "1.5.5"} {
		if isJSONNumber(s) {
			t.Errorf("%q should not be a JSON number", s)
		}
	}
}
