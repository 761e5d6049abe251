package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is the deepest nesting of objects and arrays the strict reader
// accepts: 256 nested arrays are fine, 257 are refused.
const MaxDepth = 256

// Error says where and why input was refused.
type Error struct {
	// Offset is the byte offset in the input at or after which the problem
	// was found; -1 when there is no input text (errors from Marshal).
	Offset int64
	// Pointer is the JSON Pointer (RFC 6901) of the value concerned:
	// "" for the root value (it may also be empty if the location is
	// unknown). For a duplicate member name it is the object holding it.
	Pointer string
	// Reason says what is wrong, in words.
	Reason string
}

// Error formats e as `json: at /a/0 (byte 17): reason`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("json: at ")
	if e.Pointer == "" {
		b.WriteString("root")
	} else {
		b.WriteString(e.Pointer)
	}
	if e.Offset >= 0 {
		b.WriteString(" (byte ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Check reports whether raw is exactly one strict JSON value. It returns nil
// or an [*Error]. See the package documentation for what is refused.
func Check(raw []byte) error {
	_, err := read(raw, false)
	return err
}

// Decode checks raw like [Check] and decodes it into Go values:
// map[string]any, []any, string, bool, nil and json.Number (holding the
// number literal exactly as written).
func Decode(raw []byte) (any, error) {
	return read(raw, true)
}

// Canonical returns the RFC 8785 form of raw, which must pass [Check].
// The result is a new slice; raw is not modified.
func Canonical(raw []byte) ([]byte, error) {
	if err := Check(raw); err != nil {
		return nil, err
	}
	return canonicalize(raw)
}

// canonicalize re-encodes raw, which has passed Check, in RFC 8785 form.
func canonicalize(raw []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(raw))
	// Canonicalize keeps jsontext's strict defaults (no duplicate names, no
	// invalid UTF-8); after Check it can only fail on a bug, never silently.
	if err := v.Canonicalize(); err != nil {
		return nil, fromJSONText(err, "canonicalize: ")
	}
	return v, nil
}

// Digest returns the lowercase hex SHA-256 of Canonical(raw).
func Digest(raw []byte) (string, error) {
	d, err := DigestOf(raw)
	return d.digest, err
}

// frame is one open object or array while decoding.
type frame struct {
	obj      map[string]any
	arr      []any
	name     string
	isObj    bool
	wantName bool
}

// read is the strict reader behind Check and Decode. When build is false it
// only checks and returns a nil value.
func read(raw []byte, build bool) (any, error) {
	// A *bytes.Buffer lets the decoder read raw in place, without copying;
	// it only reads from it.
	dec := newDecoder(raw, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	defer dec.free()

	var (
		stack []frame
		root  any
		done  bool
	)
	// put stores a finished value in its parent, or as the root. In
	// check-only mode it only tracks where the reader is.
	put := func(v any) {
		if len(stack) == 0 {
			root, done = v, true
			return
		}
		top := &stack[len(stack)-1]
		switch {
		case top.isObj:
			if build {
				top.obj[top.name] = v
			}
			top.wantName = true
		case build:
			top.arr = append(top.arr, v)
		}
	}

	for !done {
		tok, err := dec.ReadToken()
		if err != nil {
			if err == io.EOF {
				if len(stack) == 0 {
					return nil, &Error{Offset: int64(len(raw)), Reason: "empty input: no JSON value"}
				}
				return nil, &Error{Offset: int64(len(raw)), Pointer: string(dec.StackPointer()), Reason: "unexpected end of input"}
			}
			e := fromJSONText(err, "")
			if e.Offset < 0 { // not a syntactic error; cannot happen reading memory
				e.Offset = dec.InputOffset()
			}
			return nil, e
		}
		switch kind := tok.Kind(); kind {
		case '{', '[':
			if dec.StackDepth() > MaxDepth {
				return nil, &Error{
					Offset:  dec.InputOffset() - 1,
					Pointer: string(dec.StackPointer()),
					Reason:  "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels",
				}
			}
			f := frame{isObj: kind == '{', wantName: kind == '{'}
			if build {
				if f.isObj {
					f.obj = make(map[string]any)
				} else {
					f.arr = make([]any, 0, 4)
				}
			}
			stack = append(stack, f)
		case '}', ']':
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch {
			case !build:
				put(nil)
			case top.isObj:
				put(top.obj)
			default:
				put(top.arr)
			}
		case '"':
			if n := len(stack); n > 0 && stack[n-1].wantName {
				stack[n-1].wantName = false
				if build {
					stack[n-1].name = tok.String()
				}
				continue
			}
			if build {
				put(tok.String())
			} else {
				put(nil)
			}
		case '0':
			end := dec.InputOffset()
			start := numberStart(raw, end)
			lit := raw[start:end]
			if reason := checkNumber(lit); reason != "" {
				return nil, &Error{Offset: start, Pointer: string(dec.StackPointer()), Reason: reason}
			}
			if build {
				put(json.Number(lit))
			} else {
				put(nil)
			}
		case 'n':
			put(nil)
		case 't', 'f':
			put(kind == 't')
		default:
			return nil, &Error{Offset: dec.InputOffset(), Pointer: string(dec.StackPointer()), Reason: "unexpected token " + kind.String()}
		}
	}

	// Exactly one value: anything but whitespace after it is refused.
	end := dec.InputOffset()
	if _, err := dec.ReadToken(); err != io.EOF {
		for end < int64(len(raw)) && isSpace(raw[end]) {
			end++
		}
		return nil, &Error{Offset: end, Reason: "unexpected data after the top-level value"}
	}
	return root, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// numberStart returns where the number literal ending at end starts. A JSON
// number is always preceded by a structural character, whitespace or the
// start of input, none of which can appear in a number.
func numberStart(raw []byte, end int64) int64 {
	i := end
	for i > 0 {
		switch raw[i-1] {
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '-', '+', '.', 'e', 'E':
			i--
			continue
		}
		break
	}
	return i
}

// fromJSONText turns an error from jsontext into an *Error.
func fromJSONText(err error, prefix string) *Error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		reason := err.Error()
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			reason = "unexpected end of input"
		}
		return &Error{Offset: -1, Reason: prefix + strings.TrimPrefix(reason, "jsontext: ")}
	}
	e := &Error{Offset: se.ByteOffset, Pointer: string(se.JSONPointer)}
	switch {
	case se.Err == nil:
		e.Reason = "syntax error"
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		// jsontext points at the duplicate member; we point at its object.
		e.Pointer = string(se.JSONPointer.Parent())
		e.Reason = "duplicate object member name " + strconv.Quote(se.JSONPointer.LastToken())
	case errors.Is(se.Err, io.ErrUnexpectedEOF):
		e.Reason = "unexpected end of input"
	default:
		e.Reason = strings.TrimPrefix(se.Err.Error(), "jsontext: ")
	}
	e.Reason = prefix + e.Reason
	return e
}

// Unique reports whether raw is one syntactically valid JSON value in UTF-8
// whose objects have no duplicate member names (RFC 7493), without the
// number rule Check applies. It is for messages read by decoders that take
// the last of duplicate names, to tell whether that could matter.
func Unique(raw []byte) bool {
	return jsontext.Value(raw).IsValid()
}
