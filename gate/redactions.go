package gate

import (
	"errors"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// Redacted is what the ledger records of the credentials redacted from one
// message to a host: which ones and where, never a value.
type Redacted = ledger.Redacted

// Redaction is one credential redacted from a message.
type Redaction = ledger.Redaction

// RecordRedaction queues the record of r (event secret.redacted) without
// waiting for its commit: the message goes to the host meanwhile, already
// redacted. The channel says whether it was recorded (a Pipeline with no
// Ledger records none, and says so).
func (p *Pipeline) RecordRedaction(r Redacted) <-chan error {
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
