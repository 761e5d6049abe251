package gate

import (
	"errors"

	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/secrets"
)

// RecordRedaction queues the record of what was redacted from one message
// to a host (event secret.redacted: the host, the message, each hit where
// it was found) without waiting for its commit: the message goes to the
// host meanwhile, already redacted. The channel says whether it was
// recorded (a Pipeline with no Ledger records none, and says so).
func (p *Pipeline) RecordRedaction(session, host, message string, hits []secrets.Hit) <-chan error {
	r := ledger.Redacted{Session: session, Host: host, Message: message}
	for _, h := range hits {
		at := h.Path
		if at == "" {
			at = "text"
		}
		r.Hits = append(r.Hits, ledger.Redaction{Server: h.Server, Name: h.Name, Rule: h.Rule, Encoding: h.Encoding.String(), At: at})
	}
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
