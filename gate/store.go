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
	Pins(ctx context.Context, server string) ([]ledger.Pin, error)
	// ObservePinAs records a definition a server lists; trust says why
	// one never seen before is pinned at once (ledger.TrustNone: it waits).
	ObservePinAs(ctx context.Context, server, name, digest string, raw []byte, trust string) (ledger.Pin, error)
	// ServerSeen reports whether any pin of server is recorded.
	ServerSeen(ctx context.Context, server string) (bool, error)
	// RecordUpstreamStart records how a connection to an upstream was made
	// (its process and sandbox).
	RecordUpstreamStart(ctx context.Context, s ledger.UpstreamStart) error
	// StartSession starts the ledger session a host's requests are
	// recorded under.
	StartSession(ctx context.Context, info ledger.SessionInfo) (*ledger.Session, error)
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

// LedgerKind is the kind the ledger records a request of kind k as.
func (k Kind) LedgerKind() string {
	if k == KindTool {
		return ledger.KindTool
	}
	return kinds[k].ledgerKind
}
