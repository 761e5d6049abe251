package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// IssuerPin is what a server's sign-in is pinned as (ledger.IssuerPin):
// the authorization server's issuer, as raw JSON, and its digest.
func IssuerPin(issuer string) (raw []byte, digest string) {
	raw, _ = json.Marshal(struct {
		Issuer string `json:"issuer"`
	}{issuer})
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:])
}
