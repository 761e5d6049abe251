package export

import (
	"context"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// Witness is the otlp chain-head witness: a log record per committed head
// (mcp_guard.ledger.head: ledger identity, seq, hash, time, why), sent at
// once and counted as taken only when the collector answered 2xx. A
// collector is write-only from here: verify --witness cannot read heads
// back from it; the SIEM behind it keeps them.
type Witness struct {
	x    *Exporter
	name string
}

// NewWitness returns the otlp witness sending through x.
func NewWitness(x *Exporter) *Witness { return &Witness{x: x, name: "otlp"} }

// Name is the witness as the operator writes it.
func (w *Witness) Name() string { return w.name }

// Probe says whether the collector takes OTLP/HTTP now.
func (w *Witness) Probe(ctx context.Context) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	return w.x.Probe(ctx)
}

// Commit sends h and waits for the collector's answer.
func (w *Witness) Commit(ctx context.Context, h ledger.Head) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	at := h.At
	if at.IsZero() {
		at = time.Now()
	}
	return w.x.Send(ctx, Event{What: EventHead, Time: at, Ledger: h.Ledger, Path: h.Path, Seq: h.Seq, Hash: h.Hash, Why: h.Why})
}

// Close does nothing: the exporter is closed by its owner.
func (w *Witness) Close() error { return nil }

// witnessTimeout bounds one head's send when the caller set no deadline,
// as for the other witnesses.
const witnessTimeout = 2 * time.Second

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, witnessTimeout)
}

var _ ledger.Witness = (*Witness)(nil)
