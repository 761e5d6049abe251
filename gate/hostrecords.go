package gate

import (
	"context"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// What the host side records that is not a request: a host's own ledger
// session, how an upstream connection was made. proxy asks for these here
// and names no ledger type.

// StartHostSession starts the ledger session an HTTP host's requests are
// recorded under: host says which (its transport and remote address), pid
// is serve's.
func StartHostSession(ctx context.Context, s Store, host string, pid int) (*ledger.Session, error) {
	return s.StartSession(ctx, ledger.SessionInfo{Kind: "serve", Host: host, PID: pid})
}

// UpstreamStarted is how a connection to an upstream was made.
type UpstreamStarted struct {
	Server, Transport string
	PID               int
	Sandbox           string // the effective sandbox policy's digest; "" when none
	LandlockABI       int
	NotEnforced       []string
}

// RecordUpstreamStart records u (event upstream.started) under session.
func RecordUpstreamStart(ctx context.Context, s Store, session string, u UpstreamStarted) error {
	return s.RecordUpstreamStart(ctx, ledger.UpstreamStart{Server: u.Server, Transport: u.Transport, PID: u.PID,
		Sandbox: u.Sandbox, LandlockABI: u.LandlockABI, NotEnforced: u.NotEnforced, Session: session})
}

// FirstContact reports whether trust (TrustNew's) is a server's first
// contact.
func FirstContact(trust string) bool { return trust == ledger.TrustFirstContact }

// Waits reports whether a pin ObservePinAs returned waits for the operator
// as new.
func Waits(pn ledger.Pin) bool { return pn.State == ledger.PinNew }
