package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// eventHash builds its envelope by hand; it must be exactly what the
// canonical encoder makes of the same fields, or every ledger written before
// would stop verifying.
func TestEventHashIsTheCanonicalEnvelope(t *testing.T) {
	for _, c := range []struct {
		seq, at             int64
		kind, subject, prev string
		body                string
	}{
		{1, 1764000000000, "call.started", "call:1", genesisHash, `{"a":1,"args":{"m":"x"}}`},
		{9007199254740991, 0, "k\u2028\"\\\u0001é", "s\U0001F600</>&", "", `[]`},
		{42, -1, "", "x", "\ufeff", `"str"`},
	} {
		want, err := canon.Marshal(map[string]any{
			"seq": c.seq, "at": c.at, "kind": c.kind, "subject": c.subject,
			"body": json.RawMessage(c.body), "prev": c.prev,
		})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256hex(want)
		got, err := eventHash(c.seq, c.at, c.kind, c.subject, []byte(c.body), c.prev)
		if err != nil || got != sum {
			t.Errorf("eventHash(%q...) = %s, %v; canonical envelope %s hashes to %s", c.kind, got, err, want, sum)
		}
	}
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
