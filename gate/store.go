package gate

import (
	"context"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// Store is the ledger as serve uses it: the pipeline's records (Recorder),
// the pins a listing is observed into and the host's view is computed
// from, the host sessions calls are recorded under, and the changes other
// processes make (an operator's pin decision, "mcp-guard reset").
// *ledger.Ledger is one.
type Store interface {
	Recorder
	// Pins is every pin of server ("" for all servers).
	Pins(ctx context.Context, server string) ([]Pin, error)
	// ObservePinAs records a definition a server lists; trust says why
	// one never seen before is pinned at once (TrustNone: it waits).
	ObservePinAs(ctx context.Context, server, name, digest string, raw []byte, trust string) (Pin, error)
	// ServerSeen reports whether any pin of server is recorded.
	ServerSeen(ctx context.Context, server string) (bool, error)
	// RecordUpstreamStart records how a connection to an upstream was made
	// (its process and sandbox).
	RecordUpstreamStart(ctx context.Context, s UpstreamStart) error
	// StartSession starts the ledger session a host's requests are
	// recorded under.
	StartSession(ctx context.Context, info SessionInfo) (*ledger.Session, error)
	// JoinScope records that a ledger session serves the host of a label
	// scope; a scope none of whose processes lived within grace loses its
	// labels first (returned).
	JoinScope(ctx context.Context, session, scope string, grace time.Duration) ([]string, error)
	// Watch signals (coalesced) each time the ledger may have changed,
	// checking every interval; PinsVersion and ResetVersion say whether
	// the pins changed or the limits were reset since they were read.
	Watch(ctx context.Context, every time.Duration) (<-chan struct{}, error)
	PinsVersion(ctx context.Context) (int64, error)
	ResetVersion(ctx context.Context) (int64, error)
}

// Lease is a ledger session requests are recorded under; *ledger.Session
// is one.
type Lease interface {
	ID() string
	End(ctx context.Context) error
}

// Pin is one pin as the ledger holds it (pure data).
type Pin = ledger.Pin

// UpstreamStart is how a connection to an upstream was made, as the ledger
// records it (pure data).
type UpstreamStart = ledger.UpstreamStart

// CallStart is what the ledger records of a request when it is decided
// (pure data); Pipeline.Record takes one for a request refused before the
// pipeline.
type CallStart = ledger.CallStart

// SessionInfo describes a host's ledger session (pure data).
type SessionInfo = ledger.SessionInfo

// Pin states.
const (
	PinPinned = ledger.PinPinned // accepted: the digest the host may see
	PinNew    = ledger.PinNew    // never accepted: waits for the operator
)

// Why a definition never seen before is pinned at once (Store.ObservePinAs).
const (
	TrustNone         = ledger.TrustNone         // it waits as "new" for the operator
	TrustFirstContact = ledger.TrustFirstContact // the server's first listing (pin.mode "tofu")
	TrustNewTools     = ledger.TrustNewTools     // the operator trusts this server's new tools
)

// IssuerPin is the pin of a url server's sign-in (ledger.IssuerPin): not a
// tool's, and it makes no server seen.
const IssuerPin = ledger.IssuerPin

// LedgerKind is the kind the ledger records a request of kind k as.
func (k Kind) LedgerKind() string {
	if k == KindTool {
		return ledger.KindTool
	}
	return kinds[k].ledgerKind
}
