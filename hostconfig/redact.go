package hostconfig

import (
	"bytes"
	"encoding/json"
	"net/url"
)

// Redacted is the entry as it may be shown: env and header values, and the
// user, query and fragment of a url, replaced by "[redacted]".
func (d *Doc) Redacted(e Entry) string {
	var v any
	switch {
	case e.node != nil:
		v = canon(d.Raw, e.node)
	case e.tbl != nil:
		v = e.tbl.values
	}
	b, _ := json.MarshalIndent(redact(d.File, "", v), "", "  ")
	return string(b)
}

func redact(f File, key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			switch {
			case k == "env" || k == "headers" || k == "http_headers":
				if m, ok := val.(map[string]any); ok {
					r := map[string]any{}
					for mk, mv := range m {
						if s, ok := mv.(string); ok && IsReference(s) && k == "env" {
							r[mk] = s
						} else {
							r[mk] = "[redacted]"
						}
					}
					out[k] = r
				} else {
					out[k] = "[redacted]"
				}
			case isURLKey(f, k):
				if s, ok := val.(string); ok {
					out[k] = showURL(s)
				} else {
					out[k] = "[redacted]"
				}
			default:
				out[k] = redact(f, k, val)
			}
		}
		return out
	}
	return v
}

// showURL is u without what may hold a credential: user, query, fragment.
func showURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "[redacted]"
	}
	shown := (&url.URL{Scheme: p.Scheme, Host: p.Host, Path: p.Path}).String()
	if p.User != nil || p.RawQuery != "" || p.Fragment != "" || p.Opaque != "" {
		shown += "?[redacted]"
	}
	return shown
}

// canon is n as a Go value: what it means, without comments or layout.
func canon(raw []byte, n *node) any {
	switch n.kind {
	case '{':
		m := map[string]any{}
		for _, mb := range n.members {
			m[mb.name] = canon(raw, mb.val)
		}
		return m
	case '[':
		a := []any{}
		for _, e := range n.elems {
			a = append(a, canon(raw, e))
		}
		return a
	case '"':
		return n.str
	case '0':
		return json.Number(raw[n.start:n.end])
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}

// sameJSON reports whether a and b (JSONC) mean the same value.
func sameJSON(a, b []byte) bool {
	na, err1 := parseJSON(a, true)
	nb, err2 := parseJSON(b, true)
	if err1 != nil || err2 != nil {
		return false
	}
	ja, _ := json.Marshal(canon(a, na))
	jb, _ := json.Marshal(canon(b, nb))
	return bytes.Equal(ja, jb)
}
