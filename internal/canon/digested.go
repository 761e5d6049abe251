package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
)

// Digested is JSON text together with its canonical form and digest. Only
// [DigestOf] makes one, so holding one proves the three belong together: a
// caller that hashed a document once can hand the result on, and the next
// one checks with [Digested.Of] that it is about the bytes it has instead of
// reading them again.
type Digested struct {
	raw, canonical []byte
	digest         string
	depth          int
}

// DigestOf checks raw like [Check] and returns it with its canonical form
// and digest ([Digest]). raw is copied.
func DigestOf(raw []byte) (Digested, error) {
	c, err := Canonical(raw)
	if err != nil {
		return Digested{}, err
	}
	sum := sha256.Sum256(c)
	return Digested{raw: bytes.Clone(raw), canonical: c, digest: hex.EncodeToString(sum[:]), depth: Depth(c)}, nil
}

// Of reports whether d was made from exactly raw.
func (d Digested) Of(raw []byte) bool {
	return d.digest != "" && bytes.Equal(d.raw, raw)
}

// Digest is the lowercase hex SHA-256 of the canonical form; "" for the
// zero Digested.
func (d Digested) Digest() string { return d.digest }
