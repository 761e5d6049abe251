package canon

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A Digested is about exactly the bytes it was made from, whatever later
// happens to the caller's slice, and encodes as their canonical form.
func TestDigestOf(t *testing.T) {
	raw := []byte(`{"b":2, "a":[1.0,"\u00e9"]}`)
	d, err := DigestOf(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Digest(raw)
	if d.Digest() != want || !d.Of(raw) {
		t.Fatalf("digest %s (of raw: %v), want %s", d.Digest(), d.Of(raw), want)
	}
	if d.Of([]byte(`{"a":[1,"é"],"b":2}`)) {
		t.Fatal("a Digested claims other bytes with the same canonical form")
	}
	raw[1] = 'c'
	if d.Of(raw) || !d.Of([]byte(`{"b":2, "a":[1.0,"\u00e9"]}`)) {
		t.Fatal("a Digested follows changes to the caller's slice")
	}
	out, err := Marshal(map[string]any{"args": d})
	if err != nil || string(out) != `{"args":{"a":[1,"é"],"b":2}}` {
		t.Fatalf("Marshal: %s, %v", out, err)
	}
	if _, err := Marshal(map[string]any{"args": Digested{}}); err == nil {
		t.Fatal("a zero Digested was encoded")
	}
	if (Digested{}).Of(nil) {
		t.Fatal("the zero Digested claims empty arguments")
	}
	if _, err := DigestOf([]byte(`{"a":1,"a":2}`)); err == nil {
		t.Fatal("duplicate names digested")
	}
}

// Depth is counted for a Digested as for the raw text it stands for.
func TestDigestedDepthCountsInMarshal(t *testing.T) {
	deep := []byte(bytes.Repeat([]byte("["), MaxDepth-1))
	deep = append(deep, bytes.Repeat([]byte("]"), MaxDepth-1)...)
	d, err := DigestOf(deep)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Marshal(map[string]any{"a": d}); err != nil {
		t.Fatalf("at MaxDepth: %v", err)
	}
	if _, err := Marshal(map[string]any{"a": map[string]any{"b": d}}); err == nil {
		t.Fatal("a Digested one level too deep was encoded")
	}
	if _, err := Marshal(map[string]any{"a": map[string]any{"b": json.RawMessage(deep)}}); err == nil {
		t.Fatal("the raw text one level too deep was encoded")
	}
}
