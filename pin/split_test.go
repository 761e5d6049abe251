package pin

import (
	"bytes"
	"strings"
	"testing"
)

func TestSplitPage_KeepsEachToolsRawBytes(t *testing.T) {
	res := []byte(`{"tools":[ {"name":"a","description":"x<y","inputSchema":{"type":"object"},"x-vendor":1} ,{"name":"b","inputSchema":{ }}],"nextCursor":"c1"}`)
	p, err := SplitPage(res)
	if err != nil {
		t.Fatal(err)
	}
	if p.NextCursor != "c1" || len(p.Tools) != 2 {
		t.Fatalf("page %+v", p)
	}
	if string(p.Tools[0].Raw) != `{"name":"a","description":"x<y","inputSchema":{"type":"object"},"x-vendor":1}` {
		t.Fatalf("raw bytes changed: %s", p.Tools[0].Raw)
	}
	if string(p.Tools[1].InputSchema) != `{ }` || p.Tools[0].Description != "x<y" {
		t.Fatalf("fields: %+v", p.Tools)
	}
	// One changed byte anywhere changes the digest.
	q, _ := SplitPage(bytes.Replace(res, []byte(`"x-vendor":1`), []byte(`"x-vendor":2`), 1))
	if q.Tools[0].Digest() == p.Tools[0].Digest() {
		t.Fatal("digest did not change with an unknown field")
	}
}

func TestSplitPage_RefusesMalformed(t *testing.T) {
	for _, bad := range []string{
		`{}`, `[]`, `{"tools":{}}`, `{"tools":[1]}`, `{"tools":[{"inputSchema":{}}]}`,
		`{"tools":[{"name":"a"}]}`, `{"tools":[{"name":"a","inputSchema":"x"}]}`,
		`{"tools":[{"name":"a","inputSchema":{},"outputSchema":3}]}`, `{"tools":[{"name":1,"inputSchema":{}}]}`,
	} {
		if _, err := SplitPage([]byte(bad)); err == nil {
			t.Errorf("SplitPage(%s) accepted", bad)
		}
	}
}

func FuzzSplitPage(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":{}}],"nextCursor":"n"}`))
	f.Add([]byte(`{"tools":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := SplitPage(in)
		if err != nil {
			return
		}
		for _, tl := range p.Tools {
			if !bytes.Contains(in, tl.Raw) || !strings.HasPrefix(strings.TrimSpace(string(tl.InputSchema)), "{") {
				t.Fatalf("tool %+v not a substring of the input or has a bad schema", tl)
			}
		}
	})
}
