package canon

import (
	"io"
	"strings"
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
	out := make([][]byte, len(names))
	ok := eachMember(raw, func(name string, v []byte) bool {
		for i, n := range names {
			if name == n {
				out[i] = v
			} else if strings.EqualFold(name, n) {
				return false
			}
		}
		return true
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// eachMember calls f with each top-level member of obj, in order: its name
// as decoded, its value a slice of obj. It reports false if obj is not a
// valid JSON object (valid UTF-8, no name repeated in any object) with
// nothing after it but whitespace, or if f returned false.
func eachMember(obj []byte, f func(name string, value []byte) bool) bool {
	dec := newDecoder(obj) // parsed in place, not copied
	defer dec.free()
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		name := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		end := int(dec.InputOffset())
		if !f(name, obj[end-len(v):end:end]) {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF // nothing after the object
}

// Elements returns the elements of arr, a JSON array Members returned (so
// already valid), each a slice of arr; false if arr is not an array.
func Elements(arr []byte) ([][]byte, bool) {
	dec := newDecoder(arr)
	defer dec.free()
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
	ok = eachMember(obj, func(name string, v []byte) bool {
		names, values = append(names, name), append(values, v)
		return true
	})
	if !ok {
		return nil, nil, false
	}
	return names, values, true
}
