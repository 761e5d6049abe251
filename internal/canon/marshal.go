package canon

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// maxExactInt is 2^53: every integer of magnitude at most this is exactly
// a double. Go integers beyond it are refused by Marshal.
const maxExactInt = 1 << 53

// Marshal encodes v canonically (RFC 8785). It accepts nil, bool, string,
// json.Number, Go integers within ±2^53, finite float64, json.RawMessage
// (which must pass [Check]; it is canonicalized), [Digested] (its canonical
// form), [Object], map[string]any,
// map[string]string, []any and []string, nested in any way; anything else
// is first encoded with encoding/json and then checked and canonicalized.
//
// Marshal never substitutes. A value that cannot be encoded exactly is an
// [*Error] (Pointer locates the value, Offset is -1): NaN and ±Inf; an
// integer beyond ±2^53; invalid UTF-8 in a string or member name; a
// json.Number that is not exactly one JSON number or that the number rule
// refuses; a json.RawMessage that fails Check, including a nil or empty one
// (encoding/json would write null); nesting deeper than MaxDepth, which
// also stops cycles. Output of encoding/json is refused if it replaced
// invalid UTF-8 with U+FFFD, detected as a \ufffd escape, which it writes
// only for that reason (a MarshalJSON method writing \ufffd itself is
// refused too), and is otherwise held to Check like any input.
func Marshal(v any) ([]byte, error) {
	st := marshalState{exact: true}
	b, err := appendValue(nil, v, 0, &st)
	if err != nil {
		return nil, err
	}
	if st.exact {
		// Every part was written in its canonical form (see marshalState):
		// the text is canonical as it stands.
		return b, nil
	}
	if err := Check(b); err != nil {
		// The parts were checked as they were written, so this is the
		// number rule or a duplicate inside a fallback encoding. The
		// offset is into an intermediate text, so drop it.
		if e, ok := err.(*Error); ok {
			e.Offset = -1
		}
		return nil, err
	}
	return canonicalize(b)
}

// marshalState tracks whether the text appendValue writes is already
// canonical: true while every value written is a string, bool, null, Go
// integer, canonicalized json.RawMessage, or a map whose member names are
// all ASCII (Go's byte order is then RFC 8785's UTF-16 order) or a slice of
// these, and the nesting stays within MaxDepth. Floats, json.Number and the
// encoding/json fallback clear it: the whole text is then checked and
// canonicalized.
type marshalState struct {
	exact bool
}

// marshalErr builds an error for the value at the current position; the
// pointer is filled in while the error travels up (see wrapName/wrapIndex).
func marshalErr(reason string) *Error {
	return &Error{Offset: -1, Reason: reason}
}

// nestedErr turns an error from checking embedded JSON text into a Marshal
// error that keeps the pointer into that text (the enclosing path is added
// as the error travels up).
func nestedErr(prefix string, err error) *Error {
	e, ok := err.(*Error)
	if !ok {
		return marshalErr(prefix + err.Error())
	}
	return &Error{Offset: -1, Pointer: e.Pointer, Reason: prefix + e.Reason}
}

func wrapName(err error, name string) error {
	if e, ok := err.(*Error); ok {
		e.Pointer = "/" + escapePointerToken(name) + e.Pointer
	}
	return err
}

func wrapIndex(err error, i int) error {
	if e, ok := err.(*Error); ok {
		e.Pointer = "/" + strconv.Itoa(i) + e.Pointer
	}
	return err
}

func escapePointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// appendValue appends a JSON encoding of v (not yet canonical) to b.
func appendValue(b []byte, v any, depth int, st *marshalState) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendString(b, v)
	case json.Number:
		st.exact = false
		return appendNumber(b, v)
	case float64:
		st.exact = false
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, marshalErr("cannot encode " + strconv.FormatFloat(v, 'g', -1, 64) + ": JSON has no such number")
		}
		// The shortest round-trip form has the same decimal value as the
		// canonical one, so the number rule always accepts it.
		return strconv.AppendFloat(b, v, 'g', -1, 64), nil
	case int:
		return appendInt(b, int64(v))
	case int8:
		return appendInt(b, int64(v))
	case int16:
		return appendInt(b, int64(v))
	case int32:
		return appendInt(b, int64(v))
	case int64:
		return appendInt(b, v)
	case uint:
		return appendUint(b, uint64(v))
	case uint8:
		return appendUint(b, uint64(v))
	case uint16:
		return appendUint(b, uint64(v))
	case uint32:
		return appendUint(b, uint64(v))
	case uint64:
		return appendUint(b, v)
	case Digested:
		if v.digest == "" {
			return b, marshalErr("a zero canon.Digested")
		}
		if depth+v.depth > MaxDepth {
			st.exact = false // the Check of the whole text refuses it
		}
		return append(b, v.canonical...), nil
	case json.RawMessage:
		c, err := Canonical(v)
		if err != nil {
			return b, nestedErr("json.RawMessage refused: ", err)
		}
		if depth+Depth(c) > MaxDepth {
			st.exact = false // the Check of the whole text refuses it
		}
		return append(b, c...), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= MaxDepth {
			return b, tooDeep()
		}
		return appendObject(b, v, st, func(b []byte, k string) ([]byte, error) {
			return appendValue(b, v[k], depth+1, st)
		})
	case Object:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= MaxDepth {
			return b, tooDeep()
		}
		return appendMembers(b, v, depth, st)
	case map[string]string:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= MaxDepth {
			return b, tooDeep()
		}
		return appendObject(b, v, st, func(b []byte, k string) ([]byte, error) {
			return appendString(b, v[k])
		})
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= MaxDepth {
			return b, tooDeep()
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, depth+1, st); err != nil {
				return b, wrapIndex(err, i)
			}
		}
		return append(b, ']'), nil
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= MaxDepth {
			return b, tooDeep()
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendString(b, s); err != nil {
				return b, wrapIndex(err, i)
			}
		}
		return append(b, ']'), nil
	default:
		st.exact = false
		return appendFallback(b, v)
	}
}

// Depth is the deepest nesting of objects and arrays in raw, which must have
// passed [Check]: 0 for a scalar, 1 for {} or [1], and so on. A document
// that is to be embedded in another one needs room for the levels around it.
func Depth(raw []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func tooDeep() error {
	return marshalErr("nesting deeper than " + strconv.Itoa(MaxDepth) + " levels (or a cycle)")
}

// appendObject appends the members of m in sorted order (so that errors are
// deterministic; the canonicalizer does the RFC 8785 ordering).
func appendObject[V any](b []byte, m map[string]V, st *marshalState, val func([]byte, string) ([]byte, error)) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
		if st.exact && !isASCII(k) {
			st.exact = false
		}
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendString(b, k); err != nil {
			err.(*Error).Reason = "object member name: " + err.(*Error).Reason
			return b, wrapName(err, strings.ToValidUTF8(k, "\uFFFD"))
		}
		b = append(b, ':')
		if b, err = val(b, k); err != nil {
			return b, wrapName(err, k)
		}
	}
	return append(b, '}'), nil
}

// Object is a JSON object given member by member: Marshal writes it as it
// writes a map[string]any of the same members (in name order, each value
// as Marshal writes it), for the price of one slice instead of a map's
// table. Two members with one name are an error, as a map cannot hold
// them.
type Object []Member

// Member is one member of an Object.
type Member struct {
	Name  string
	Value any
}

// appendMembers is appendObject for an Object: sorted by name unless it
// already is, which is how its makers write it.
func appendMembers(b []byte, o Object, depth int, st *marshalState) ([]byte, error) {
	less := func(x, y Member) int { return strings.Compare(x.Name, y.Name) }
	if !slices.IsSortedFunc(o, less) {
		o = slices.SortedFunc(slices.Values(o), less)
	}
	b = append(b, '{')
	for i, m := range o {
		if st.exact && !isASCII(m.Name) {
			st.exact = false
		}
		if i > 0 {
			if o[i-1].Name == m.Name {
				return b, wrapName(marshalErr("duplicate object member name "+strconv.Quote(m.Name)), strings.ToValidUTF8(m.Name, "\uFFFD"))
			}
			b = append(b, ',')
		}
		var err error
		if b, err = appendString(b, m.Name); err != nil {
			err.(*Error).Reason = "object member name: " + err.(*Error).Reason
			return b, wrapName(err, strings.ToValidUTF8(m.Name, "\uFFFD"))
		}
		b = append(b, ':')
		if b, err = appendValue(b, m.Value, depth+1, st); err != nil {
			return b, wrapName(err, m.Name)
		}
	}
	return append(b, '}'), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// AppendString appends s as a canonical JSON string. It refuses invalid
// UTF-8, like Marshal.
func AppendString(b []byte, s string) ([]byte, error) { return appendString(b, s) }

func appendString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return b, marshalErr("string is not valid UTF-8")
	}
	out, err := jsontext.AppendQuote(b, s)
	if err != nil {
		return b, marshalErr("cannot encode string: " + strings.TrimPrefix(err.Error(), "jsontext: "))
	}
	return out, nil
}

func appendInt(b []byte, n int64) ([]byte, error) {
	if n > maxExactInt || n < -maxExactInt {
		return b, marshalErr("integer " + strconv.FormatInt(n, 10) + " is beyond ±2^53 and cannot be a canonical JSON number exactly; send it as a string")
	}
	return strconv.AppendInt(b, n, 10), nil
}

func appendUint(b []byte, n uint64) ([]byte, error) {
	if n > maxExactInt {
		return b, marshalErr("integer " + strconv.FormatUint(n, 10) + " is beyond 2^53 and cannot be a canonical JSON number exactly; send it as a string")
	}
	return strconv.AppendUint(b, n, 10), nil
}

func appendNumber(b []byte, n json.Number) ([]byte, error) {
	if !isJSONNumber(string(n)) {
		return b, marshalErr("json.Number " + strconv.Quote(string(n)) + " is not a JSON number")
	}
	if reason := checkNumber([]byte(n)); reason != "" {
		return b, marshalErr(reason)
	}
	return append(b, n...), nil
}

// isJSONNumber reports whether s is exactly one number per the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}

// appendFallback encodes v with encoding/json and checks the result.
// Nesting beyond MaxDepth (counting the containers above v) is caught by
// the Check of the whole text in Marshal.
func appendFallback(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, marshalErr("encoding/json: " + strings.TrimPrefix(err.Error(), "json: "))
	}
	if hasReplacementEscape(out) {
		return b, marshalErr("a string is not valid UTF-8 (encoding/json would substitute U+FFFD)")
	}
	if err := Check(out); err != nil {
		return b, nestedErr("encoding/json output refused: ", err)
	}
	return append(b, out...), nil
}

// hasReplacementEscape reports whether JSON text contains a \ufffd escape,
// which encoding/json writes only in place of invalid UTF-8 (a valid U+FFFD
// is written as is).
func hasReplacementEscape(js []byte) bool {
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' {
			continue
		}
		if i+5 < len(js) && js[i+1] == 'u' && strings.EqualFold(string(js[i+2:i+6]), "fffd") {
			return true
		}
		i++ // skip the escaped character
	}
	return false
}
