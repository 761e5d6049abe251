package classify

import (
	"encoding/json"
	"strings"
	"testing"
)

// doc decodes JSON the way the gate does: numbers as json.Number.
func doc(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func sp(s string) *string { return &s }
func ip(n int64) *int64   { return &n }
func bp(b bool) *bool     { return &b }

// one compiles a single catch-all rule with one predicate.
func one(t testing.TB, ptr string, p Predicate) *Rules {
	t.Helper()
	r, err := Compile([]Rule{{Server: "*", Tool: "*", Class: Read, Action: Allow, When: map[string]Predicate{ptr: p}}})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return r
}
