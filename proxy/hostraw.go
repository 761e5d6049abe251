package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-guard/mcp-guard/pin"
)

// What the host is shown of definitions is the servers' own bytes: each
// listed tool, prompt, resource and template exactly as its server listed
// it (and pinned it), with only its name or URI rewritten in place; the
// lists in each server's order, servers in config order. mcp-guard
// answers the four list methods itself with them (methods.go), never
// decoding them into mcp-go's types.

// listKey is the member of a list result that holds the items.
var listKey = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// itemField is the member of a listed item the host sees rewritten.
func itemField(k pin.ItemKind) string {
	switch k {
	case pin.Prompts:
		return "name"
	case pin.Resources:
		return "uri"
	}
	return "uriTemplate"
}

// hostLists builds, from a view, the JSON array each list request is
// answered with.
func hostLists(v *view) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(listKey))
	var b []byte
	b = append(b, '[')
	n := 0
	for _, r := range v.Report {
		e, ok := v.Exposed[r.Exposed]
		if r.Exposed == "" || !ok {
			continue
		}
		b = appendItem(b, n, e.Tool.Raw, "name", e.Name, func() ([]byte, error) {
			t, err := hostTool(e)
			if err != nil {
				return nil, err
			}
			return json.Marshal(t)
		})
		n++
	}
	out["tools/list"] = append(b, ']')
	c := v.Content
	for _, kind := range pin.ItemKinds() {
		b, n := []byte{'['}, 0
		if c != nil {
			for _, r := range c.Report {
				e, ok := c.Exposed[kind][r.Exposed]
				if r.Exposed == "" || !ok || r.Kind != kind.Noun() {
					continue
				}
				b = appendItem(b, n, e.Item.Raw, itemField(kind), e.Host, func() ([]byte, error) { return hostItemJSON(e) })
				n++
			}
		}
		out[kind.Method()] = append(b, ']')
	}
	return out
}

// appendItem appends one listed item to the array b (n items so far): raw
// with member field set to name, on one line. If raw cannot be rewritten
// (it was pinned, so it is an object with that member), mcp-go's encoding
// of it stands in.
func appendItem(b []byte, n int, raw []byte, field, name string, fallback func() ([]byte, error)) []byte {
	item, ok := replaceMember(raw, field, jsonString(name))
	if !ok {
		var err error
		if item, err = fallback(); err != nil {
			return b
		}
	}
	if one, _, err := oneLine(item); err == nil {
		item = one
	}
	if n > 0 {
		b = append(b, ',')
	}
	return append(b, item...)
}

// hostList is the array a list method is answered with now.
func (p *Proxy) hostList(method string) (json.RawMessage, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	l, ok := p.view.lists[method]
	return l, ok
}

// replaceMember returns obj (a JSON object) with the value of its
// top-level member name replaced by value, every other byte as it was.
// ok is false when obj is not an object or has no such member.
func replaceMember(obj []byte, name string, value []byte) (out []byte, ok bool) {
	start, end, ok := memberValue(obj, name)
	if !ok {
		return nil, false
	}
	out = make([]byte, 0, len(obj)-int(end-start)+len(value))
	out = append(append(append(out, obj[:start]...), value...), obj[end:]...)
	return out, true
}

// setMember is replaceMember, or when obj has no member name, obj with
// the member added at its end.
func setMember(obj []byte, name string, value []byte) ([]byte, bool) {
	if out, ok := replaceMember(obj, name, value); ok {
		return out, true
	}
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 {
		return nil, false
	}
	sep := ","
	if len(bytes.TrimSpace(obj[bytes.IndexByte(obj, '{')+1:end])) == 0 {
		sep = ""
	}
	out := append([]byte(nil), obj[:end]...)
	out = append(append(append(append(out, sep...), jsonString(name)...), ':'), value...)
	return append(out, obj[end:]...), true
}

// member returns the raw value of obj's top-level member name.
func member(obj []byte, name string) (json.RawMessage, bool) {
	start, end, ok := memberValue(obj, name)
	if !ok {
		return nil, false
	}
	return obj[start:end], true
}

// memberValue finds the bytes of the value of obj's top-level member name.
func memberValue(obj []byte, name string) (start, end int64, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return 0, 0, false
	}
	for dec.PeekKind() != '}' {
		k, err := dec.ReadToken()
		if err != nil {
			return 0, 0, false
		}
		key := k.String() // before the next read voids k
		v, err := dec.ReadValue()
		if err != nil {
			return 0, 0, false
		}
		end := dec.InputOffset()
		if key == name {
			return end - int64(len(v)), end, true
		}
	}
	return 0, 0, false
}
