package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrLabelsChanged is what RecordCall returns, recording nothing, for a
// call made with IfLabels when its scope holds other labels than the ones
// the call was decided with (LabelsChangedError says which).
var ErrLabelsChanged = errors.New("ledger: the scope's labels changed since the call was decided")

// LabelsCheck makes RecordCall of an allowed call a check of the flow
// stage's reading as well: the call is recorded only if Scope's live
// labels are exactly Labels (each label with the call that brought it),
// read in the call's own transaction.
type LabelsCheck struct {
	Scope  string
	Labels []Label
}

// LabelsChangedError is RecordCall's refusal of a call whose LabelsCheck
// failed: Labels are what the scope holds, as the call's transaction read
// them, for the flow stage to decide again with.
type LabelsChangedError struct {
	Scope  string
	Labels []Label
}

func (e *LabelsChangedError) Error() string {
	return fmt.Sprintf("ledger: scope %q: %v", e.Scope, ErrLabelsChanged)
}

func (e *LabelsChangedError) Unwrap() error { return ErrLabelsChanged }

// SameLabels reports whether a and b are the same live labels: the same
// labels, each brought by the same call. What a flow decides and what an
// ask is bound to depend on nothing else of them.
func SameLabels(a, b []Label) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Label != b[i].Label || a[i].CallID != b[i].CallID {
			return false
		}
	}
	return true
}

// labelsView is each scope's live labels as the writer's connection read
// them. It lives in writerView, dropped as the interrupted set is: when
// another connection commits, when a batch rolls back, and when an
// operation of our own other than recording a call or an outcome runs
// (those never change a label).
type labelsView map[string][]Label

// scopeLabels is ScopeLabels inside tx, from the writer's view (read
// first if another write dropped it).
func (t *Tx) scopeLabels(scope string) ([]Label, error) {
	if ls, ok := t.l.wview.labels[scope]; ok {
		return ls, nil
	}
	rows, err := t.Query(scopeLabelsQuery, scope)
	if err != nil {
		return nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
	}
	ls, err := scanLabels(rows)
	if err != nil {
		return nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
	}
	if t.l.wview.labels == nil {
		t.l.wview.labels = labelsView{}
	}
	t.l.wview.labels[scope] = ls
	return ls, nil
}

// checkLabels is IfLabels' check inside tx.
func (t *Tx) checkLabels(c *LabelsCheck) error {
	now, err := t.scopeLabels(c.Scope)
	if err != nil {
		return err
	}
	if !SameLabels(now, c.Labels) {
		return &LabelsChangedError{Scope: c.Scope, Labels: now}
	}
	return nil
}

// scanLabels reads scopeLabelsQuery's rows, and closes them.
func scanLabels(rows *sql.Rows) ([]Label, error) {
	defer rows.Close()
	var out []Label
	for rows.Next() {
		var lb Label
		var at int64
		if err := rows.Scan(&lb.Scope, &lb.Label, &lb.CallID, &lb.SessionID, &at, &lb.Kind, &lb.Server, &lb.Tool, &lb.Args); err != nil {
			return nil, err
		}
		lb.GainedAt = time.UnixMilli(at)
		out = append(out, lb)
	}
	return out, rows.Err()
}

// knownLabels is each scope's live labels as this process last read them:
// in a batch the writer committed, or by KnownScopeLabels. It may lag what
// another process committed since; a call decided with it is checked in
// its own commit (CallStart.IfLabels). Any operation of our own that could
// change a label empties it (gen counts how often), so it never lags our
// own writes.
type knownLabels struct {
	mu  sync.Mutex
	gen uint64
	m   map[string][]Label
}

func (k *knownLabels) get(scope string) ([]Label, uint64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ls, ok := k.m[scope]
	return ls, k.gen, ok
}

// put remembers ls for scope, unless the set was emptied since gen.
func (k *knownLabels) put(scope string, ls []Label, gen uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen != gen {
		return
	}
	if k.m == nil {
		k.m = map[string][]Label{}
	}
	k.m[scope] = ls
}

// afterCommit keeps what a committed batch read or changed: if an
// operation dropped the writer's views, what was known is forgotten first;
// then the labels the batch read (after any such operation) are known.
func (k *knownLabels) afterCommit(dropped bool, read labelsView) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if dropped {
		k.gen++
		k.m = nil
	}
	for scope, ls := range read {
		if k.m == nil {
			k.m = map[string][]Label{}
		}
		k.m[scope] = ls
	}
}

// KnownScopeLabels is the labels scope holds as this process last read
// them, or, when it has not, ScopeLabels now; fresh reports which. Labels
// known may lag another process's commits: a call decided with them is
// recorded with IfLabels, which checks them in its own transaction. It
// never lags this process's own label writes.
func (l *Ledger) KnownScopeLabels(ctx context.Context, scope string) (labels []Label, fresh bool, err error) {
	ls, gen, ok := l.known.get(scope)
	if ok {
		return ls, false, nil
	}
	if ls, err = l.ScopeLabels(ctx, scope); err != nil {
		return nil, true, err
	}
	l.known.put(scope, ls, gen)
	return ls, true, nil
}
