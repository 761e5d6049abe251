package proxy

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// plainCalls are lines plainFastCall reads (and readFastCall reads the
// same); plainDeclines are lines it leaves to readFastCall, each one thing
// away from a plain call.
var (
	plainCalls = []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"x":1}}}`,
		`{"params":{"arguments":{"x":1},"name":"a__b"},"method":"tools/call","id":-7,"jsonrpc":"2.0"}`,
		" { \"jsonrpc\" : \"2.0\" ,\n\t\"id\" : \"s-1\" , \"method\":\"tools/call\",\r\n\"params\" : { \"name\" : \"a__b\" , \"arguments\" : { } } } \n",
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"s":"}]\"{[,","t":["a",{"u":null}],"n":-1.5e3}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":[1,"2",true]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":"x\\\"y"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":12}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":true}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"n":12345678901234567890}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","_meta":{"progressToken":"p"},"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"ünï__cødé"}}`,
	}
	plainDeclines = []string{
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"tools/call"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a__b"}}`,
		`{"id":1,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u005f_b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","task":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","Arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"n":1e999}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","_meta":{"progressToken":1,"x":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"},"error":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"},"x":1}`,
		`{"jsonrpc":"2.0","ID":1,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"}} 1`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"}}]`,
	}
)

// FuzzPlainFastCall holds the one-pass reading to encoding/json's: a line
// plainFastCall reads, readFastCall (and so mcp-go, FuzzParseFastCall)
// reads as the same call, id and argument bytes.
func FuzzPlainFastCall(f *testing.F) {
	for _, s := range append(plainCalls, plainDeclines...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !canon.Unique(line) {
			return
		}
		c, ok := plainFastCall(line)
		if !ok {
			return
		}
		want, ok := readFastCall(line)
		if !ok {
			t.Fatalf("plainFastCall read %q, which encoding/json does not read as a plain call", line)
		}
		if !bytes.Equal(c.id, want.id) || !reflect.DeepEqual(c.req, want.req) {
			t.Fatalf("plainFastCall read %q as\n%s %+v\nencoding/json reads\n%s %+v", line, c.id, c.req, want.id, want.req)
		}
	})
}

func TestPlainFastCall(t *testing.T) {
	for _, line := range plainCalls {
		if _, ok := plainFastCall([]byte(line)); !ok {
			t.Errorf("plainFastCall(%s) declined a plain call", line)
		}
		if _, ok := readFastCall([]byte(line)); !ok {
			t.Errorf("readFastCall(%s) declined a plain call", line)
		}
	}
	for _, line := range plainDeclines {
		if _, ok := plainFastCall([]byte(line)); ok {
			t.Errorf("plainFastCall(%s) read a line it should leave to encoding/json", line)
		}
	}
}

// The call keeps its own copy of the id and the arguments: the stdio host
// reads its next line into the same buffer while the call runs.
func TestPlainFastCallOwnsItsBytes(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"a__b","arguments":{"x":"y"}}}`)
	c, ok := plainFastCall(line)
	if !ok {
		t.Fatal("declined")
	}
	for i := range line {
		line[i] = ' '
	}
	if string(c.id) != `"abc"` || string(c.req.Params.RawArguments) != `{"x":"y"}` {
		t.Fatalf("the call's bytes changed with the line: id %s, arguments %s", c.id, c.req.Params.RawArguments)
	}
}

// BenchmarkParseFastCall reads a host's plain tools/call (plain) and the
// same call with an escape in its method's neighbour, which encoding/json
// reads (read).
func BenchmarkParseFastCall(b *testing.B) {
	for name, line := range map[string]string{
		"plain": `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"b__echo","arguments":{"message":"hello"},"_meta":{"progressToken":5}}}`,
		"read":  `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"b\u005f_echo","arguments":{"message":"hello"},"_meta":{"progressToken":5}}}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, ok := parseFastCall([]byte(line)); !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}
