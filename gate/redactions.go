package gate

import (
	"errors"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// RecordRedaction queues the record of r (event secret.redacted) without
// waiting for its commit: the message goes to the host meanwhile, already
// redacted. The channel says whether it was recorded (a Pipeline with no
// Ledger records none, and says so).
func (p *Pipeline) RecordRedaction(r ledger.Redacted) <-chan error {
	rl, ok := p.Ledger.(interface {
		RecordRedactionLazy(ledger.Redacted) <-chan error
	})
	if !ok {
		done := make(chan error, 1)
		done <- errors.New("gate: the ledger store records no redactions")
		return done
	}
	return rl.RecordRedactionLazy(r)
}
