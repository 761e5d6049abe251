package export

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Store is a gate.Store that hands every decision and outcome the ledger
// committed to an Exporter. What is recorded, and every answer, are the
// ledger's own: the export only reads them, after they are committed, and
// never waits.
type Store struct {
	gate.Store
	x   *Exporter
	now func() time.Time

	mu      sync.Mutex
	started map[int64]Event // what an outcome repeats of its call's decision
}

// maxStarted bounds the calls whose outcome is awaited; past it an outcome
// goes out with its call ID only.
const maxStarted = 4096

// Wrap returns s, exporting to x.
func Wrap(s gate.Store, x *Exporter) *Store {
	return &Store{Store: s, x: x, now: time.Now, started: map[int64]Event{}}
}

func (s *Store) decision(c ledger.CallStart, id, approval int64) {
	e := Event{What: EventDecision, Time: s.now(), CallID: id, Kind: c.Kind, Server: c.Server, Name: c.Tool,
		Exposed: c.Exposed, SessionID: c.SessionID, RequestID: c.RequestID, Decision: c.Decision, Rule: c.Rule,
		Class: c.Class, Reason: c.Reason, Approval: approval, Args: argsOf(c)}
	if c.FlowLabels != "" { // the labels a flow decided on: "private since call 12", ...
		e.Labels = strings.Split(c.FlowLabels, ", ")
	}
	if !e.refused() {
		s.remember(e)
	}
	s.x.Add(e)
}

// remember keeps what identifies e's call for its outcome.
func (s *Store) remember(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.started) < maxStarted {
		s.started[e.CallID] = Event{Kind: e.Kind, Server: e.Server, Name: e.Name, Exposed: e.Exposed, SessionID: e.SessionID,
			RequestID: e.RequestID, Decision: e.Decision, Rule: e.Rule, Class: e.Class}
	}
}

// forget returns what remember kept of call id.
func (s *Store) forget(id int64) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.started[id]
	delete(s.started, id)
	return e
}

// argsOf is the arguments as the host sent them (Args, or the bytes that
// were not JSON).
func argsOf(c ledger.CallStart) []byte {
	if c.Args != nil {
		return c.Args
	}
	return c.ArgsInvalid
}

// RecordCall records c, then exports the decision.
func (s *Store) RecordCall(ctx context.Context, c ledger.CallStart) (int64, error) {
	id, err := s.Store.RecordCall(ctx, c)
	if err == nil {
		s.decision(c, id, 0)
	}
	return id, err
}

// RecordAsk records c waiting for the operator, then exports it.
func (s *Store) RecordAsk(ctx context.Context, c ledger.CallStart, a ledger.ApprovalStart) (int64, int64, error) {
	id, approval, err := s.Store.RecordAsk(ctx, c, a)
	if err == nil {
		s.decision(c, id, approval)
	}
	return id, approval, err
}

// ConsumeGrant records c as allowed by a grant, then exports it.
func (s *Store) ConsumeGrant(ctx context.Context, c ledger.CallStart, check func(ledger.Approval) error) (int64, int64, error) {
	id, approval, err := s.Store.ConsumeGrant(ctx, c, check)
	if err == nil {
		s.decision(c, id, approval)
	}
	return id, approval, err
}

// UseApproval records an approved call as started, then exports that.
func (s *Store) UseApproval(ctx context.Context, id int64, check func(ledger.Approval) error) error {
	var used ledger.Approval
	err := s.Store.UseApproval(ctx, id, func(a ledger.Approval) error {
		used = a
		return check(a)
	})
	if err == nil {
		s.x.Add(Event{What: EventDecision, Time: s.now(), CallID: used.CallID, Server: used.Server, Name: used.Tool,
			SessionID: used.SessionID, Decision: "approved", Rule: used.Rule, Class: used.Class, Approval: id})
	}
	return err
}

func (s *Store) outcome(id int64, o ledger.Outcome) {
	e := s.forget(id)
	e.What, e.Time, e.CallID = EventOutcome, s.now(), id
	e.State, e.IsError, e.Err, e.Duration, e.ResultBytes, e.Result = o.State, o.IsError, o.Err, o.Duration, o.ResultBytes, o.ResultDigest
	s.x.Add(e)
}

// RecordOutcomeLazy records o as the ledger does (without waiting); the
// outcome is exported once the ledger committed it.
func (s *Store) RecordOutcomeLazy(id int64, o ledger.Outcome, then func(error)) {
	s.Store.RecordOutcomeLazy(id, o, func(err error) {
		if err == nil {
			s.outcome(id, o)
		}
		then(err)
	})
}

// RecordLateOutcome records o, then exports it.
func (s *Store) RecordLateOutcome(ctx context.Context, id int64, o ledger.Outcome) error {
	err := s.Store.RecordLateOutcome(ctx, id, o)
	if err == nil {
		s.outcome(id, o)
	}
	return err
}

// RecordRedactionLazy passes a redaction record to the ledger the Store
// wraps: what is recorded is unchanged by export (the record names which
// credential was redacted and where, never its value, and is not exported).
func (s *Store) RecordRedactionLazy(r ledger.Redacted) <-chan error {
	rl, ok := s.Store.(interface {
		RecordRedactionLazy(ledger.Redacted) <-chan error
	})
	if !ok {
		done := make(chan error, 1)
		done <- errors.New("otlp: the wrapped store records no redactions")
		return done
	}
	return rl.RecordRedactionLazy(r)
}
