package ledger

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// Call states.
const (
	StateStarted     = "started"     // allowed and forwarded; no outcome yet
	StateRefused     = "refused"     // not forwarded (any decision but allow)
	StateDone        = "done"        // the upstream answered
	StateFailed      = "failed"      // the call failed (transport error, limit, ...)
	StateCancelled   = "cancelled"   // the host cancelled it
	StateInterrupted = "interrupted" // its process died or lost its lease
	StateWaiting     = "waiting"     // an ask: waits for the operator's decision
)

// knownCallState reports whether s is a state this package writes.
func knownCallState(s string) bool {
	switch s {
	case StateStarted, StateRefused, StateDone, StateFailed, StateCancelled, StateInterrupted, StateWaiting:
		return true
	}
	return false
}

// Call kinds: what the host asked for.
const (
	KindTool     = "tool"     // tools/call
	KindPrompt   = "prompt"   // prompts/get; Tool is the prompt's name
	KindResource = "resource" // resources/read; Tool is the upstream URI read

	// What an upstream asked of the host; Tool is the method.
	KindSampling    = "sampling"    // sampling/createMessage
	KindElicitation = "elicitation" // elicitation/create
	KindRoots       = "roots"       // roots/list, answered from the config
)

// MaxArgsDepth is the deepest nesting a call's arguments may have to be
// recorded as arguments: events and approval bindings hold them a few levels
// down, and no stored document may nest deeper than canon.MaxDepth.
// Deeper arguments are refused by the gate and kept as ArgsInvalid.
const MaxArgsDepth = canon.MaxDepth - 8

// CallStart is what is recorded when a call is decided, before it is
// forwarded.
type CallStart struct {
	// Kind is KindTool (also when empty), KindPrompt, KindResource, or what
	// an upstream asked of the host: KindSampling, KindElicitation, KindRoots.
	Kind                                                   string
	SessionID, RequestID, Server, Tool, Exposed, PinDigest string
	// Args is the arguments' verbatim bytes; they must be valid JSON
	// (canon.Check). Empty means no arguments.
	Args []byte
	// ArgsDigested may carry Args already hashed (by the gate); it is used
	// only if it was made from exactly Args, else Args are read again.
	ArgsDigested canon.Digested
	// ArgsInvalid holds verbatim bytes that were NOT valid JSON. They are
	// never stored as Args.
	ArgsInvalid []byte
	// Decision is allow, deny, invalid, ask, refuse, unknown_tool, ...
	Decision string
	Rule     int
	Class    string
	Reason   string
	// FlowLabels is the label set a flow's ask binds (not a calls
	// column): ConsumeGrant uses only an approval bound to exactly it.
	FlowLabels string
	// IfNotInterrupted makes RecordCall of an allowed call L7's check as
	// well: if an identical call (server, tool, canonical arguments) was
	// interrupted by a crash and has not run again under an operator's
	// decision since, nothing is recorded and the error wraps
	// ErrInterrupted. The check is made in the call's own transaction.
	IfNotInterrupted bool
	// IfLabels, on an allowed call, records it only if the scope's live
	// labels are still the ones its flow stage decided with; if not,
	// nothing is recorded and the error is a *LabelsChangedError with the
	// labels held now. The check is made in the call's own transaction.
	IfLabels *LabelsCheck
}

// Outcome is how a started call ended.
type Outcome struct {
	State        string // done, failed or cancelled
	ResultDigest string
	ResultBytes  int64
	IsError      bool
	Err          string
	Duration     time.Duration
}

func callSubject(id int64) string { return "call:" + strconv.FormatInt(id, 10) }

// nullable stores "" as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// RecordCall records a decided call and its event ("call.started" when
// Decision is allow, else "call.refused") in one durable transaction, and
// returns its id. It refuses Args that are not valid JSON: such bytes belong
// in ArgsInvalid.
func (l *Ledger) RecordCall(ctx context.Context, c CallStart) (int64, error) {
	prep, err := l.prepareCall(c)
	if err != nil {
		return 0, err
	}
	state, kind := StateRefused, "call.refused"
	if c.Decision == "allow" {
		state, kind = StateStarted, "call.started"
	}
	var id int64
	op := insertCallOp(c, prep, state, kind, &id)
	err = l.write(ctx, func(tx *Tx) error {
		// A call allowed (started) or refused changes nothing L7 asks
		// about (only an ask's or a grant's call that starts does), and
		// no label.
		tx.keepSets = true
		return op(tx)
	}, true)
	if err != nil {
		return 0, err
	}
	return id, nil
}

// checkCallStart refuses an incomplete call or arguments that are not strict
// JSON, and returns the arguments' digest.
func checkCallStart(c CallStart) (string, error) {
	// A call to a name that maps to no upstream tool has no server or tool;
	// it is still recorded, under the name the host used.
	unknown := strings.HasPrefix(c.Decision, "unknown_") && c.Exposed != ""
	if c.SessionID == "" || c.Decision == "" || (!unknown && (c.Server == "" || c.Tool == "")) {
		return "", errors.New("ledger: record call: session, server, tool and decision are required")
	}
	if c.IfNotInterrupted && c.Decision != "allow" {
		return "", fmt.Errorf("ledger: record call %s/%s: IfNotInterrupted is L7's check of an allowed call, not of a %q one", c.Server, c.Tool, c.Decision)
	}
	if c.IfLabels != nil && (c.Decision != "allow" || c.IfLabels.Scope == "") {
		return "", fmt.Errorf("ledger: record call %s/%s: IfLabels is the flow stage's check of an allowed call in a scope, not of a %q one in scope %q", c.Server, c.Tool, c.Decision, c.IfLabels.Scope)
	}
	switch c.Kind {
	case "", KindTool, KindPrompt, KindResource, KindSampling, KindElicitation, KindRoots:
	default:
		return "", fmt.Errorf("ledger: record call: kind %q is not tool, prompt, resource, sampling, elicitation or roots", c.Kind)
	}
	var argsDigest string
	if len(c.Args) > 0 {
		if len(c.ArgsInvalid) > 0 {
			return "", errors.New("ledger: record call: both Args and ArgsInvalid are set")
		}
		d := c.ArgsDigested.Digest()
		if !c.ArgsDigested.Of(c.Args) {
			var err error
			if d, err = canon.Digest(c.Args); err != nil { // refuses what canon.Check refuses
				return "", fmt.Errorf("ledger: record call %s/%s: args are not valid JSON (record such bytes as ArgsInvalid): %w", c.Server, c.Tool, err)
			}
		}
		if n := canon.Depth(c.Args); n > MaxArgsDepth {
			return "", fmt.Errorf("ledger: record call %s/%s: args nest %d levels, more than the %d an event can hold (record such bytes as ArgsInvalid)", c.Server, c.Tool, n, MaxArgsDepth)
		}
		argsDigest = d
	}
	return argsDigest, nil
}

// callPrep is what recording a call needs that does not depend on the
// batch it commits in, worked out before it is queued: the arguments'
// digest, and the row's digest begun with the arguments (its first
// column). Arguments may be megabytes: hashed in the batch, they would
// hold up every other call's commit, and the outcome would hash them again.
type callPrep struct {
	argsDigest string
	row        rowDigestStart
	// apart is set when the arguments are stored in call_args (argsApart):
	// then row is begun with a NULL args column, and args is the call_args
	// row's digest begun with the arguments.
	apart bool
	args  rowDigestStart
}

// argsApart is the length above which a call's arguments are stored in
// call_args, not in its calls row (migration8): a longer value does not
// fit a 2 KiB page, and SQLite rewrites a row's overflow pages whenever
// the row is updated, as recording the outcome does.
const argsApart = 1024

// prepareCall checks c (checkCallStart) and begins its rows' digests.
func (l *Ledger) prepareCall(c CallStart) (callPrep, error) {
	argsDigest, err := checkCallStart(c)
	if err != nil {
		return callPrep{}, err
	}
	p := callPrep{argsDigest: argsDigest, apart: len(c.Args) > argsApart}
	inRow := c.Args
	if p.apart {
		inRow = nil
		if p.args, err = l.bound["call_args"].startDigest(map[string]any{"args": c.Args}, "args"); err != nil {
			return callPrep{}, fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
		}
	}
	if p.row, err = l.bound["calls"].startDigest(map[string]any{"args": nullBytes(inRow)}, "args"); err != nil {
		return callPrep{}, fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
	}
	return p, nil
}

// insertCallSQL is the INSERT of a call. Its id comes back as the insert's
// rowid, and its bound content is built from the values it wrote
// (digestFrom), so nothing is read back.
func insertCallSQL() string {
	return `INSERT INTO calls (session_id, request_id, server, tool, exposed, pin_digest,
		args, args_invalid, args_digest, decision, rule, class, reason, state, started_at, kind)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
}

// insertCallOp inserts a call row in state and its event kind, setting *id.
func insertCallOp(c CallStart, prep callPrep, state, kind string, id *int64) func(*Tx) error {
	argsDigest := prep.argsDigest
	return func(tx *Tx) error {
		// The labels first: the flow stage decides before L7 does.
		if c.IfLabels != nil {
			if err := tx.checkLabels(c.IfLabels); err != nil {
				return fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
			}
		}
		if c.IfNotInterrupted {
			again, err := tx.wasInterrupted(interruptedKey{c.Server, c.Tool, argsDigest})
			if err != nil {
				return fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
			}
			if again {
				return fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, ErrInterrupted)
			}
		}
		now := tx.Now().UnixMilli()
		callKind := c.Kind
		if callKind == "" {
			callKind = KindTool
		}
		inRow := c.Args
		if prep.apart {
			inRow = nil
		}
		row := map[string]any{
			"session_id": c.SessionID, "request_id": nullable(c.RequestID), "server": c.Server, "tool": c.Tool,
			"exposed": nullable(c.Exposed), "pin_digest": nullable(c.PinDigest), "args": nullBytes(inRow),
			"args_invalid": nullBytes(c.ArgsInvalid), "args_digest": nullable(argsDigest), "decision": c.Decision,
			"rule": int64(c.Rule), "class": nullable(c.Class), "reason": nullable(c.Reason), "state": state,
			"started_at": now, "kind": callKind,
		}
		res, err := tx.exec(tx.l.insertCall, row["session_id"], row["request_id"], row["server"], row["tool"],
			row["exposed"], row["pin_digest"], row["args"], row["args_invalid"], row["args_digest"], row["decision"],
			row["rule"], row["class"], row["reason"], row["state"], row["started_at"], row["kind"])
		if err == nil {
			*id, err = res.LastInsertId()
		}
		if err != nil {
			return fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
		}
		row["id"] = *id
		digest, err := tx.l.bound["calls"].digestFrom(prep.row, row)
		if err != nil {
			return fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
		}
		tx.touchDigest("calls", *id, digest)
		if prep.apart {
			if err := insertArgs(tx, *id, c.Args, prep.args); err != nil {
				return fmt.Errorf("ledger: record call %s/%s: %w", c.Server, c.Tool, err)
			}
		}
		if state == StateStarted {
			tx.l.started.put(*id, startedRow{cols: row, digest: prep.row})
		}
		var args, invalid any
		switch {
		case prep.apart:
			// Arguments stored apart are bound by the call_args row's
			// digest (in "rows"), not copied into the event.
		case c.ArgsDigested.Of(c.Args):
			args = c.ArgsDigested // its canonical form, read once already
		case len(c.Args) > 0:
			args = json.RawMessage(c.Args)
		}
		if len(c.ArgsInvalid) > 0 {
			invalid = base64.StdEncoding.EncodeToString(c.ArgsInvalid)
		}
		// The members in name order (bindTouched adds rows in its place).
		body := make(canon.Object, 0, 16)
		if !prep.apart {
			body = append(body, canon.Member{Name: "args", Value: args})
		}
		body = append(body,
			canon.Member{Name: "args_digest", Value: argsDigest},
			canon.Member{Name: "args_invalid", Value: invalid},
			canon.Member{Name: "class", Value: c.Class},
			canon.Member{Name: "decision", Value: c.Decision},
			canon.Member{Name: "exposed", Value: c.Exposed},
			canon.Member{Name: "id", Value: *id})
		if callKind != KindTool { // tool calls' events read as they always did
			body = append(body, canon.Member{Name: "kind", Value: callKind})
		}
		body = append(body,
			canon.Member{Name: "pin_digest", Value: c.PinDigest},
			canon.Member{Name: "reason", Value: c.Reason},
			canon.Member{Name: "request_id", Value: c.RequestID},
			canon.Member{Name: "rule", Value: int64(c.Rule)},
			canon.Member{Name: "server", Value: c.Server},
			canon.Member{Name: "session", Value: c.SessionID},
			canon.Member{Name: "state", Value: state},
			canon.Member{Name: "tool", Value: c.Tool})
		_, err = tx.AppendEvent(kind, callSubject(*id), body)
		return err
	}
}

// insertArgs stores call id's arguments in call_args and binds the row;
// begun is its digest begun with args.
func insertArgs(tx *Tx, id int64, args []byte, begun rowDigestStart) error {
	if _, err := tx.exec("INSERT INTO call_args (call_id, args) VALUES (?, ?)", id, args); err != nil {
		return fmt.Errorf("store arguments: %w", err)
	}
	digest, err := tx.l.bound["call_args"].digestFrom(begun, map[string]any{"args": args, "call_id": id})
	if err != nil {
		return fmt.Errorf("store arguments: %w", err)
	}
	tx.touchDigest("call_args", id, digest)
	return nil
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func outcomeBody(id int64, o Outcome) canon.Object {
	// The members in name order (bindTouched adds rows in its place).
	return append(make(canon.Object, 0, 7),
		canon.Member{Name: "duration_ms", Value: o.Duration.Milliseconds()},
		canon.Member{Name: "error", Value: o.Err},
		canon.Member{Name: "id", Value: id},
		canon.Member{Name: "is_error", Value: o.IsError},
		canon.Member{Name: "result_bytes", Value: o.ResultBytes},
		canon.Member{Name: "result_digest", Value: o.ResultDigest},
		canon.Member{Name: "state", Value: o.State})
}

// RecordOutcome moves a started call to o.State (done, failed or cancelled)
// with its result columns and event "call.<state>", in one transaction. It
// returns an error wrapping ErrConflict when the call is not in state started
// (another process recorded its outcome, or it was marked interrupted).
// Callers recording an outcome after the host gave up should pass
// context.WithoutCancel(ctx).
func (l *Ledger) RecordOutcome(ctx context.Context, id int64, o Outcome) error {
	if err := checkOutcome(id, o); err != nil {
		return err
	}
	return l.Write(ctx, outcomeOp(id, o))
}

// RecordOutcomeLazy is RecordOutcome without waiting (see WriteLazy): the
// outcome usually commits together with the next call's decision. then is
// called once with the result, on the goroutine that committed it (or on
// the caller's, at once, for an outcome refused before it is queued): it
// must be quick and must not write to the ledger. A callback, not a
// channel a goroutine waits on: each call's outcome would otherwise start
// a goroutine and wake it, on the next call's path.
func (l *Ledger) RecordOutcomeLazy(id int64, o Outcome, then func(error)) {
	if err := checkOutcome(id, o); err != nil {
		then(err)
		return
	}
	l.writeLazy(outcomeOp(id, o), true, then)
}

func checkOutcome(id int64, o Outcome) error {
	switch o.State {
	case StateDone, StateFailed, StateCancelled:
		return nil
	}
	return fmt.Errorf("ledger: record outcome of call %d: state %q is not done, failed or cancelled", id, o.State)
}

// outcomeSQL is the CAS of a started call to its outcome (what CAS would
// build, built once); with returning, it also returns the row's bound
// content, for a call whose columns the ledger does not hold (startedRows).
func outcomeSQL(returning string) string {
	return `UPDATE "calls" SET state = ?, "duration_ms" = ?, "ended_at" = ?, "error" = ?, "is_error" = ?,
		"result_bytes" = ?, "result_digest" = ? WHERE "id" = ? AND state = ?` + returning
}

func outcomeOp(id int64, o Outcome) func(tx *Tx) error {
	return func(tx *Tx) error {
		set := [...]any{o.State, o.Duration.Milliseconds(), tx.Now().UnixMilli(), nullable(o.Err), boolInt(o.IsError),
			o.ResultBytes, nullable(o.ResultDigest)}
		held, ok := tx.l.started.take(id)
		row := held.cols
		// An outcome changes nothing L7 asks about (an ask's or a grant's
		// call counted as run again when it started), and no label.
		tx.keepSets = true
		if !ok {
			err := tx.casReturning("calls", id, StateStarted, o.State, tx.l.outcomeReturning, append(set[:], id, StateStarted)...)
			if err != nil {
				return err
			}
			_, err = tx.AppendEvent("call."+o.State, callSubject(id), outcomeBody(id, o))
			return err
		}
		res, err := tx.exec(tx.l.outcome, append(set[:], id, StateStarted)...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return fmt.Errorf("ledger: cas calls %d %s->%s: %w", id, StateStarted, o.State, err)
		}
		if n != 1 {
			return fmt.Errorf("ledger: cas calls %d %s->%s: %w", id, StateStarted, o.State, ErrConflict)
		}
		// The row is this op's alone now (taken): it becomes the row as
		// the UPDATE left it.
		for i, c := range [...]string{"state", "duration_ms", "ended_at", "error", "is_error", "result_bytes", "result_digest"} {
			row[c] = set[i]
		}
		digest, err := tx.l.bound["calls"].digestFrom(held.digest, row)
		if err != nil {
			return fmt.Errorf("ledger: record outcome of call %d: %w", id, err)
		}
		tx.touchDigest("calls", id, digest)
		_, err = tx.AppendEvent("call."+o.State, callSubject(id), outcomeBody(id, o))
		return err
	}
}

// RecordLateOutcome records what the upstream answered after the call was
// cancelled, failed or interrupted: the late_* columns and event
// "call.late_outcome". The call's state is unchanged. It returns an error
// wrapping ErrConflict when the call is in another state or already has a
// late outcome.
func (l *Ledger) RecordLateOutcome(ctx context.Context, id int64, o Outcome) error {
	if o.State == "" {
		o.State = StateDone
	}
	return l.Write(ctx, func(tx *Tx) error {
		res, err := tx.Exec(`UPDATE calls SET late_at = ?, late_state = ?, late_duration_ms = ?,
			late_result_digest = ?, late_result_bytes = ?, late_is_error = ?, late_error = ?
			WHERE id = ? AND state IN ('cancelled', 'failed', 'interrupted') AND late_at IS NULL`,
			tx.Now().UnixMilli(), o.State, o.Duration.Milliseconds(), nullable(o.ResultDigest),
			o.ResultBytes, boolInt(o.IsError), nullable(o.Err), id)
		if err != nil {
			return fmt.Errorf("ledger: record late outcome of call %d: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("ledger: record late outcome of call %d: %w", id, err)
		}
		if n != 1 {
			return fmt.Errorf("ledger: record late outcome of call %d: not cancelled, failed or interrupted, or already recorded: %w", id, ErrConflict)
		}
		tx.touch("calls", id)
		_, err = tx.AppendEvent("call.late_outcome", callSubject(id), outcomeBody(id, o))
		return err
	})
}
