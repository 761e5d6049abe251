package secrets

import "sync/atomic"

// Redactor finds and replaces known secrets and found credentials. It is
// safe for concurrent use. Its known secrets can be replaced while it is in
// use (SetKnown): a sign-in's token is renewed while mcp-guard serves.
type Redactor struct {
	opt Options
	m   atomic.Pointer[matcher]
}

// NewRedactor builds the Redactor for k's secrets (k may be nil: found
// credentials only).
func NewRedactor(k *Known, opt Options) *Redactor {
	r := &Redactor{opt: opt}
	r.m.Store(newMatcher(k, opt))
	return r
}

// SetKnown makes k the known secrets: every call that starts after it
// returns finds k's, and no longer those it replaced.
func (r *Redactor) SetKnown(k *Known) { r.m.Store(newMatcher(k, r.opt)) }

// RedactJSON is matcher.RedactJSON with the known secrets in force.
func (r *Redactor) RedactJSON(b []byte) (out []byte, hits []Hit) { return r.m.Load().RedactJSON(b) }

// Contains is matcher.Contains with the known secrets in force.
func (r *Redactor) Contains(b []byte) []Hit { return r.m.Load().Contains(b) }

// RedactText is matcher.RedactText with the known secrets in force.
func (r *Redactor) RedactText(b []byte) (out []byte, hits []Hit) { return r.m.Load().RedactText(b) }
