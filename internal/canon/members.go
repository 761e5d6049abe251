package canon

import (
	"bytes"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Members reads raw as one JSON object in a single pass and returns the
// values of its top-level members named names, each byte for byte as raw
// holds it (a slice of raw; nil for a member raw lacks).
//
// It reports false, for the caller to read raw the way it always did,
// unless raw is plainly such an object: valid UTF-8, no member name
// repeated in any object, nothing after it but whitespace, and no member
// name that differs from one of names only in case. encoding/json, which
// mcp-go and the rest of mcp-guard read with, takes such a name for the
// field (Unicode simple folding) and the last of repeated names; in
// anything Members accepts, there is nothing of either to take, so a
// reader that falls back to encoding/json for what Members declines
// reads every message as encoding/json does, in a fraction of the time a
// large result takes it (encoding/json scans the whole of it once to
// validate, then again to decode).
func Members(raw []byte, names ...string) ([][]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	out := make([][]byte, len(names))
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		name := tok.String()
		want := -1
		for i, n := range names {
			if name == n {
				want = i
			} else if strings.EqualFold(name, n) {
				return nil, false
			}
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		if want >= 0 {
			end := int(dec.InputOffset())
			out[want] = raw[end-len(v) : end : end]
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false // something after the object
	}
	return out, true
}

// Elements returns the elements of arr, a JSON array Members returned (so
// already valid), each a slice of arr; false if arr is not an array.
func Elements(arr []byte) ([][]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(arr))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	var out [][]byte
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		out = append(out, arr[end-len(v):end:end])
	}
	return out, true
}

// Fields returns every member of obj, a JSON object Members returned (so
// already valid, its names unique), in order: each name as encoding/json
// decodes it, each value a slice of obj; false if obj is not an object.
func Fields(obj []byte) (names []string, values [][]byte, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(obj))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, nil, false
		}
		name := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nil, nil, false
		}
		end := int(dec.InputOffset())
		names, values = append(names, name), append(values, obj[end-len(v):end:end])
	}
	return names, values, true
}
