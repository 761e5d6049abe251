package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"
)

// A server mcp-guard speaks 2026-07-28 to puts in every result what that
// revision's envelope has: `resultType` and, in `_meta`, its own
// `io.modelcontextprotocol/serverInfo`. A host that speaks an earlier
// revision gets the result as the server writes it for that revision:
// without both, every other byte as the server sent it.

// serverInfoMeta is the _meta key of a 2026-07-28 result naming its server.
const serverInfoMeta = "io.modelcontextprotocol/serverInfo"

// fromServer is a result the upstream server sent as mcp-guard answers
// with it (methods.go): without the 2026-07-28 envelope a server of that
// revision puts in it. A 2026-07-28 host gets mcp-guard's own envelope
// around it (modernResult): mcp-guard is the server it speaks to.
func (p *Proxy) fromServer(server string, raw json.RawMessage) json.RawMessage {
	if u := p.upstream(server); u != nil && u.Modern() {
		return legacyEnvelope(raw)
	}
	return raw
}

// legacyEnvelope is res, a 2026-07-28 result, without its resultType and
// its _meta's serverInfo (nor _meta, when nothing else was in it).
func legacyEnvelope(res json.RawMessage) json.RawMessage {
	out := removeMember(res, "resultType")
	meta, ok := member(out, "_meta")
	if !ok {
		return out
	}
	rest := removeMember(meta, serverInfoMeta)
	if len(rest) == len(meta) {
		return out
	}
	if bytes.Equal(bytes.Join(bytes.Fields(rest), nil), []byte("{}")) {
		return removeMember(out, "_meta")
	}
	if o, ok := replaceMember(out, "_meta", rest); ok {
		return o
	}
	return out
}

// removeMember returns obj (a JSON object) without its top-level members
// named name, every other byte as it was; obj itself when it has none or
// is not an object.
func removeMember(obj []byte, name string) []byte {
	for {
		out, ok := removeFirst(obj, name)
		if !ok {
			return obj
		}
		obj = out
	}
}

// removeFirst removes the first top-level member name of obj with the
// comma that separated it from its neighbour.
func removeFirst(obj []byte, name string) ([]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return nil, false
	}
	prev, first := dec.InputOffset(), true // the end of the last member, or of '{'
	for dec.PeekKind() != '}' {
		k, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		key := k.String()
		if _, err := dec.ReadValue(); err != nil {
			return nil, false
		}
		end := dec.InputOffset()
		if key != name {
			prev, first = end, false
			continue
		}
		if first { // take the comma after it (and the space around it) instead
			i := skipSpace(obj, end)
			if i < int64(len(obj)) && obj[i] == ',' {
				end = skipSpace(obj, i+1)
			}
		}
		out := make([]byte, 0, len(obj)-int(end-prev))
		return append(append(out, obj[:prev]...), obj[end:]...), true
	}
	return nil, false
}

// skipSpace is the offset of the first byte at or after i in b that is not
// JSON white space.
func skipSpace(b []byte, i int64) int64 {
	for i < int64(len(b)) && bytes.IndexByte([]byte(" \t\r\n"), b[i]) >= 0 {
		i++
	}
	return i
}
