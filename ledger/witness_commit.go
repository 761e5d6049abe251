package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Why a head was committed (Head.Why).
const (
	WhyStart    = "start"
	WhyStop     = "stop"
	WhyEvery    = "every"    // witness_every events since the last head
	WhyInterval = "interval" // witness_interval passed with new events
)

// CommitterOptions configure a Committer.
type CommitterOptions struct {
	Every    int64         // events between heads (default 100)
	Interval time.Duration // longest time a new event waits to be witnessed (default 10s)
	Log      *slog.Logger  // nil: discarded
}

// ErrNoWitness is the error a commit returns when no witness took the head.
var ErrNoWitness = errors.New("no witness took the chain head")

// A Committer commits this process's chain head to its witnesses: at
// start, every Every events or Interval (in Run, off every caller's path),
// on demand (Sync, before a call that could rewrite the ledger), and at
// stop. Commits are serialized, so heads reach each witness in order.
type Committer struct {
	l    *Ledger
	ws   []Witness
	opts CommitterOptions
	log  *slog.Logger

	mu        sync.Mutex // serializes commits; guards the fields below
	witnessed int64      // the last seq a witness took
	failing   map[string]error
}

// NewCommitter returns a committer for l's heads to ws.
func NewCommitter(l *Ledger, ws []Witness, opts CommitterOptions) *Committer {
	if opts.Every <= 0 {
		opts.Every = 100
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Committer{l: l, ws: ws, opts: opts, log: log, failing: map[string]error{}}
}

// Witnesses names the witnesses, as configured.
func (c *Committer) Witnesses() []string {
	names := make([]string, len(c.ws))
	for i, w := range c.ws {
		names[i] = w.Name()
	}
	return names
}

// Probe tries every witness and returns why each that cannot be reached
// cannot (nil entries for those that can).
func (c *Committer) Probe(ctx context.Context) []error {
	errs := make([]error, len(c.ws))
	for i, w := range c.ws {
		errs[i] = w.Probe(ctx)
	}
	return errs
}

// Commit commits the head this process last committed to every witness,
// unless a witness already took that seq. It succeeds when at least one
// witness took it; each witness that failed is logged when it starts
// failing and when it recovers.
func (c *Committer) Commit(ctx context.Context, why string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, err := c.l.CommittedHead(ctx)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	if h.Seq == 0 || (h.Seq <= c.witnessed && why != WhyStop) {
		return nil
	}
	h.Why = why
	if len(c.ws) == 0 {
		return fmt.Errorf("witness: head seq %d (%s): %w: none is configured", h.Seq, why, ErrNoWitness)
	}
	var errs []error
	took := 0
	for _, w := range c.ws {
		err := w.Commit(ctx, h)
		prev, was := c.failing[w.Name()]
		switch {
		case err == nil:
			took++
			if was {
				delete(c.failing, w.Name())
				c.log.Warn("witness reachable again", "witness", w.Name(), "was", prev.Error())
			}
		default:
			errs = append(errs, err)
			if !was {
				c.log.Error("WITNESS FAILED: the chain head is not committed outside the ledger", "witness", w.Name(), "seq", h.Seq, "why", why, "err", err.Error())
			}
			c.failing[w.Name()] = err
		}
	}
	if took == 0 {
		return fmt.Errorf("witness: head seq %d (%s): %w: %w", h.Seq, why, ErrNoWitness, errors.Join(errs...))
	}
	c.witnessed = h.Seq
	return nil
}

// Witnessed is the last seq a witness took (0: none yet).
func (c *Committer) Witnessed() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.witnessed
}

// Run commits heads until ctx ends: when Every events were committed since
// the last head, and every Interval when there are new events. It runs on
// a goroutine of its own; nothing on a call's path waits for it.
func (c *Committer) Run(ctx context.Context) {
	if len(c.ws) == 0 {
		return // none configured: serve said so at start
	}
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		why := WhyInterval
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.l.HeadReaches(c.Witnessed() + c.opts.Every):
			h, err := c.l.CommittedHead(ctx)
			if err != nil || h.Seq-c.Witnessed() < c.opts.Every {
				continue
			}
			why = WhyEvery
		}
		if err := c.Commit(ctx, why); err != nil && ctx.Err() == nil {
			c.log.Debug("witness commit failed", "err", err)
		}
	}
}

// Stop commits the final head ("stop"), on a context of its own.
func (c *Committer) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), witnessTimeout)
	defer cancel()
	return c.Commit(ctx, WhyStop)
}

// Close closes every witness.
func (c *Committer) Close() error {
	var errs []error
	for _, w := range c.ws {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}

// Describe says, for the operator, what the witnesses are and which can be
// reached now: "journal (reachable), file:/x (unreachable: ...)".
func Describe(names []string, errs []error) string {
	if len(names) == 0 {
		return "none"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		if errs[i] == nil {
			parts[i] = n + " (reachable)"
		} else {
			parts[i] = fmt.Sprintf("%s (UNREACHABLE: %v)", n, errs[i])
		}
	}
	return strings.Join(parts, ", ")
}
