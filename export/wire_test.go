package export

import (
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// fields reads one message's fields: number → the raw values (bytes for
// length-delimited fields, the varint or fixed64 as a number otherwise).
func fields(t *testing.T, b []byte) map[protowire.Number][][]byte {
	t.Helper()
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			v = protowire.AppendVarint(nil, x)
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b)
			v = b[:8]
		default:
			t.Fatalf("field %d: unexpected wire type %d", num, typ)
		}
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		out[num] = append(out[num], v)
		b = b[n:]
	}
	return out
}

// logAttrs decodes encodeLogs' output down to each record's string
// attributes, by the OTLP field numbers.
func logAttrs(t *testing.T, req []byte) []map[string]string {
	var out []map[string]string
	for _, rl := range fields(t, req)[fResourceLogs] {
		for _, sl := range fields(t, rl)[fScopeRecords] {
			for _, rec := range fields(t, sl)[fScopeItems] {
				m := map[string]string{}
				for _, kv := range fields(t, rec)[fLogAttr] {
					f := fields(t, kv)
					val := fields(t, f[fValue][0])
					if s, ok := val[fString]; ok {
						m[string(f[fKey][0])] = string(s[0])
					}
				}
				out = append(out, m)
			}
		}
	}
	return out
}

// The encoding reads back by the OTLP field numbers, long values included
// (lengths past one varint byte), and every string is valid UTF-8 (a
// collector refuses a whole batch holding one that is not).
func TestEncodeLogs_ReadsBackValidUTF8(t *testing.T) {
	long := strings.Repeat("x", 300)
	e := Event{What: EventDecision, CallID: 7, Server: "db", Name: "re\xffad", Decision: "invalid", Reason: long, Args: []byte("{\"q\":\"\xc3\x28\"}")}
	r, _ := e.records("L")
	got := logAttrs(t, encodeLogs(nil, "v", []logRecord{r, r}))
	if len(got) != 2 {
		t.Fatalf("%d records, want 2", len(got))
	}
	a := got[1]
	if a["mcp_guard.server"] != "db" || a["mcp_guard.reason"] != long || a["mcp.method.name"] != "tools/call" {
		t.Fatalf("attributes read back: %v", a)
	}
	for k, v := range a {
		if !utf8.ValidString(v) {
			t.Errorf("%s = %q is not UTF-8", k, v)
		}
	}
	if a["gen_ai.tool.name"] != "re\uFFFDad" || !strings.Contains(a[attrArgs], "\uFFFD") {
		t.Fatalf("invalid UTF-8 not replaced: %q, %q", a["gen_ai.tool.name"], a[attrArgs])
	}
}
