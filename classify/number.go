package classify

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// decimal is an exact, canonical decimal number: digits × 10^exp, where
// digits has no leading or trailing zeros. Zero is digits == "" with neg
// false, so two decimals are equal exactly when their fields are.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseDecimal parses a number in JSON syntax (RFC 8259: -?int frac? exp?)
// without rounding and without big-number arithmetic, so a hostile
// "1e999999999" costs nothing. Exponents beyond ±10^15 saturate; such numbers
// can never equal an int64 or a float64 anyway.
func parseDecimal(s string) (decimal, bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return decimal{}, false
	}
	intPart := s[start:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == fs {
			return decimal{}, false
		}
		frac = s[fs:i]
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && isDigit(s[i]) {
			if exp < 1e15 {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == es {
			return decimal{}, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	all := intPart + frac
	lead := 0
	for lead < len(all) && all[lead] == '0' {
		lead++
	}
	if lead == len(all) {
		return decimal{}, true // zero, whatever its sign
	}
	last := len(all) - 1
	for all[last] == '0' {
		last--
	}
	exp += int64(len(all)-1-last) - int64(len(frac))
	return decimal{neg: neg, digits: all[lead : last+1], exp: exp}, true
}

// floatDecimal is f's shortest round-trip decimal; f must be finite.
func floatDecimal(f float64) decimal {
	d, _ := parseDecimal(strconv.FormatFloat(f, 'e', -1, 64))
	return d
}

func intDecimal(n int64) decimal {
	d, _ := parseDecimal(strconv.FormatInt(n, 10))
	return d
}

type scalarKind uint8

const (
	sString scalarKind = iota + 1
	sBool
	sNumber
)

// scalar is a comparable string, bool or number.
type scalar struct {
	kind scalarKind
	s    string
	b    bool
	n    decimal
}

func (a scalar) equal(b scalar) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case sString:
		return a.s == b.s
	case sBool:
		return a.b == b.b
	case sNumber:
		return a.n == b.n
	}
	return false
}

// configScalar converts an operator-written value (a TOML scalar).
func configScalar(v any) (scalar, error) {
	switch x := v.(type) {
	case string:
		return scalar{kind: sString, s: x}, nil
	case bool:
		return scalar{kind: sBool, b: x}, nil
	case int64:
		return scalar{kind: sNumber, n: intDecimal(x)}, nil
	case int:
		return scalar{kind: sNumber, n: intDecimal(int64(x))}, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return scalar{}, fmt.Errorf("%v never equals a JSON number", x)
		}
		return scalar{kind: sNumber, n: floatDecimal(x)}, nil
	case json.Number:
		d, ok := parseDecimal(string(x))
		if !ok {
			return scalar{}, fmt.Errorf("bad number %q", string(x))
		}
		return scalar{kind: sNumber, n: d}, nil
	}
	return scalar{}, fmt.Errorf("want a string, integer, float or boolean, got %s", typeName(v))
}

// argScalar converts a decoded argument value; ok is false for null,
// objects, arrays, malformed json.Number and non-finite floats.
func argScalar(v any) (scalar, bool) {
	switch x := v.(type) {
	case string:
		return scalar{kind: sString, s: x}, true
	case bool:
		return scalar{kind: sBool, b: x}, true
	case json.Number:
		d, ok := parseDecimal(string(x))
		return scalar{kind: sNumber, n: d}, ok
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return scalar{}, false
		}
		return scalar{kind: sNumber, n: floatDecimal(x)}, true
	case int64:
		return scalar{kind: sNumber, n: intDecimal(x)}, true
	case int:
		return scalar{kind: sNumber, n: intDecimal(int64(x))}, true
	}
	return scalar{}, false
}

// typeName names a decoded value's JSON/TOML type for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64, int64, int:
		return "number"
	case map[string]any:
		return "table"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
