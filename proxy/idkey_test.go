package proxy

import (
	"encoding/json"
	"fmt"
	"testing"
)

// slowIDKey is rawIDKey by decoding, as it was before plainIDKey.
func slowIDKey(raw []byte) (string, bool) {
	var id any
	if len(raw) == 0 || json.Unmarshal(raw, &id) != nil || id == nil {
		return "", false
	}
	switch id.(type) {
	case string, float64:
		return fmt.Sprintf("%T:%v", id, id), true
	}
	return "", false
}

// The ids read without a decoder key as decoded ones do, and what
// plainIDKey declines still keys by decoding.
func TestRawIDKey_PlainAgreesWithDecoded(t *testing.T) {
	plain := []string{`"abc"`, `""`, `"a b~"`, `0`, `7`, `-0`, `-12`, `123456789012345`}
	declined := []string{`"\u0061"`, `"é"`, `1.5`, `1e3`, `01`, `1234567890123456`, `-`, `"a\"b"`, `null`, `{}`, `0x1`}
	for _, raw := range plain {
		got, ok := plainIDKey([]byte(raw))
		want, _ := slowIDKey([]byte(raw))
		if !ok || got != want {
			t.Errorf("plainIDKey(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range declined {
		if k, ok := plainIDKey([]byte(raw)); ok {
			t.Errorf("plainIDKey(%s) = %q, want it declined", raw, k)
		}
		got, gotOK := rawIDKey([]byte(raw))
		want, wantOK := slowIDKey([]byte(raw))
		if got != want || gotOK != wantOK {
			t.Errorf("rawIDKey(%s) = %q, %v; want %q, %v", raw, got, gotOK, want, wantOK)
		}
	}
}

func FuzzRawIDKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `12`, `-0`, `1.5`, `"\u00e9"`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gotOK := rawIDKey(raw)
		want, wantOK := slowIDKey(raw)
		if got != want || gotOK != wantOK {
			t.Fatalf("rawIDKey(%q) = %q, %v; decoded: %q, %v", raw, got, gotOK, want, wantOK)
		}
	})
}
