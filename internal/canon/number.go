package canon

import (
	"math"
	"strconv"
)

// maxExactDigits is the number of digits below which a plain integer
// literal (no fraction, no exponent) is always exactly a double:
// every integer of at most 15 digits is below 2^53.
const maxExactDigits = 15

// checkNumber applies the number rule to lit, a literal that already
// matches the JSON number grammar. It returns "" if the canonical (RFC 8785)
// form of lit has the same exact decimal value as lit, else the reason it
// is refused.
//
// The canonical form prints the shortest decimal that round-trips the
// double nearest to lit, so it is compared with lit as a normalized decimal
// (significant digits plus the position of the decimal point). That is
// exact, and linear in the length of lit however large its exponent: an
// exponent far outside the range of a double is refused before any
// parsing.
func checkNumber(lit []byte) string {
	if isShortInteger(lit) {
		return ""
	}
	digits, point := normalizeLiteral(lit)
	if len(digits) == 0 {
		return "" // the literal is a zero (0, -0, 0.0e5): canonical form 0
	}
	// value = 0.digits × 10^point, so 10^(point-1) <= |value| < 10^point.
	switch {
	case point > 309: // |value| >= 1e309 > MaxFloat64
		return "number " + quoteLiteral(lit) + " is out of range for a double-precision number; send it as a string"
	case point < -330: // |value| < 1e-331, far below half the smallest subnormal
		return "number " + quoteLiteral(lit) + " is too small for a double-precision number and would be canonicalized as 0; send it as a string"
	}
	// Parse the normalized form, whose exponent is small: strconv.ParseFloat
	// is correctly rounded and linear in the number of digits, but caps
	// exponents it reads, which a literal with a million leading zeros and
	// an exponent to match would defeat.
	norm := make([]byte, 0, len(digits)+16)
	if lit[0] == '-' {
		norm = append(norm, '-')
	}
	norm = append(norm, "0."...)
	norm = append(norm, digits...)
	norm = append(norm, 'e')
	norm = strconv.AppendInt(norm, point, 10)
	f, err := strconv.ParseFloat(string(norm), 64)
	if math.IsInf(f, 0) {
		return "number " + quoteLiteral(lit) + " is out of range for a double-precision number; send it as a string"
	}
	if err != nil { // cannot happen for grammar-checked input
		return "number " + quoteLiteral(lit) + " is not a valid number"
	}
	if f == 0 {
		return "number " + quoteLiteral(lit) + " is too small for a double-precision number and would be canonicalized as 0; send it as a string"
	}

	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64)
	cdigits, cpoint := normalizeLiteral(e)
	if string(digits) != string(cdigits) || point != cpoint {
		return "number " + quoteLiteral(lit) + " cannot be represented exactly: its canonical form would be " +
			string(formatES6(f)) + "; send it as a string"
	}
	return ""
}

// isShortInteger reports whether lit is an integer literal of at most
// maxExactDigits digits, which is always exact.
func isShortInteger(lit []byte) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > maxExactDigits {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// exponentCap bounds the exponent read from a literal. A literal whose
// exponent reaches it is far outside the range of a double unless it has
// about as many digits, which input sizes rule out, so saturating there can
// only turn a comparison into a mismatch, never into a false match.
const exponentCap = 1 << 40

// normalizeLiteral splits a number literal (JSON grammar, or Go's 'e'
// format) into its significant digits, with leading and trailing zeros
// removed, and the position of the decimal point relative to them:
// value = 0.digits × 10^point. A zero has no digits. The sign is ignored.
func normalizeLiteral(lit []byte) (digits []byte, point int64) {
	i := 0
	if i < len(lit) && (lit[i] == '-' || lit[i] == '+') {
		i++
	}
	var intLen int64
	digits = make([]byte, 0, len(lit))
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		digits = append(digits, lit[i])
		intLen++
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			digits = append(digits, lit[i])
		}
	}
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := false
		if i < len(lit) && (lit[i] == '-' || lit[i] == '+') {
			neg = lit[i] == '-'
			i++
		}
		for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if exp = exp*10 + int64(lit[i]-'0'); exp > exponentCap {
				exp = exponentCap // saturate; cannot overflow: exp was <= the cap
			}
		}
		if neg {
			exp = -exp
		}
	}
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = digits[lead:]
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return nil, 0
	}
	return digits, intLen + exp - int64(lead)
}

// formatES6 formats f the way RFC 8785 (ECMAScript Number.toString) does;
// it is used only in messages, the encoder is jsontext's.
func formatES6(f float64) []byte {
	if f == 0 {
		return []byte("0")
	}
	abs := math.Abs(f)
	if abs < 1e-6 || abs >= 1e21 {
		b := strconv.AppendFloat(nil, f, 'e', -1, 64)
		// Go writes e-07 / e+07; ECMAScript writes e-7 / e+7.
		n := len(b)
		if n >= 4 && b[n-2] == '0' && (b[n-3] == '-' || b[n-3] == '+') {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64)
}

// quoteLiteral returns lit for a message, shortened if it is very long.
func quoteLiteral(lit []byte) string {
	const max = 64
	if len(lit) <= max {
		return string(lit)
	}
	return string(lit[:max]) + "...(" + strconv.Itoa(len(lit)) + " bytes)"
}
