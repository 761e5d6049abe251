package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Witness findings (WitnessReport.Finding).
const (
	WitnessTruncated = "truncated" // a witnessed head is past the ledger's last event
	WitnessRewritten = "rewritten" // the event at a witnessed seq has another hash
	WitnessConflict  = "conflict"  // two witnessed heads of this ledger disagree
	WitnessReplaced  = "replaced"  // heads for this path name only other ledgers
)

// WitnessReport is what CheckHeads found. OK is false when a witnessed
// head shows the ledger was cut, rewritten or replaced, or when the
// witness holds conflicting heads; Finding and Problem then say which.
type WitnessReport struct {
	OK       bool
	Finding  string
	Problem  string
	Heads    int   // witnessed heads of this ledger
	Others   int   // heads of other ledgers at this ledger's path
	LastSeq  int64 // the ledger's last event
	Covered  Head  // the witnessed head with the highest seq (Seq 0: none)
	Identity string
}

// Uncovered says, when the ledger goes on past every witnessed head,
// which events no witnessed head covers (a cut or rewrite of them would
// not be seen); "" when the last event is witnessed.
func (r WitnessReport) Uncovered() string {
	if r.Covered.Seq >= r.LastSeq {
		return ""
	}
	if r.Covered.Seq == 0 {
		return fmt.Sprintf("no witnessed head covers any of its %d events", r.LastSeq)
	}
	return fmt.Sprintf("no witnessed head covers the tail, events %d to %d (the last witnessed head is seq %d, %s at %s)",
		r.Covered.Seq+1, r.LastSeq, r.Covered.Seq, r.Covered.Why, r.Covered.At.Format(time.RFC3339))
}

// CheckHeads compares heads read back from a witness with the ledger, in
// one read snapshot. A head belongs to this ledger when its identity is
// this ledger's (the hash of event 1) or it has none (given on the command
// line). For each, the ledger must reach its seq (else truncated) with the
// same hash there (else rewritten); two of them at one seq with different
// hashes conflict (the same account can send forged heads to the journal:
// any conflict fails). Heads for this ledger's path that all name other
// ledgers mean the file was replaced or rewritten from its first event.
// CheckHeads does not walk the chain: run Verify for that.
func (l *Ledger) CheckHeads(ctx context.Context, heads []Head) (WitnessReport, error) {
	tx, err := l.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return WitnessReport{}, fmt.Errorf("ledger: check witness: %w", err)
	}
	defer tx.Rollback()
	var rep WitnessReport
	if rep.Identity, err = l.identity(ctx, tx); err != nil {
		return rep, err
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&last); err != nil {
		return rep, fmt.Errorf("ledger: check witness: last event: %w", err)
	}
	rep.LastSeq = last.Int64

	var mine []Head
	others := map[string]bool{}
	for _, h := range heads {
		switch {
		case h.Ledger == "" || (rep.Identity != "" && h.Ledger == rep.Identity):
			mine = append(mine, h)
		case h.Path == l.path:
			others[h.Ledger] = true
			rep.Others++
		}
	}
	rep.Heads = len(mine)
	if len(mine) == 0 && len(others) > 0 {
		ids := make([]string, 0, len(others))
		for id := range others {
			ids = append(ids, short(id))
		}
		sort.Strings(ids)
		rep.Finding = WitnessReplaced
		rep.Problem = fmt.Sprintf("replaced: the witness holds %d heads for %s, all of other ledgers (first event %s), none of this one (first event %s): the file was replaced, or rewritten from its first event",
			rep.Others, l.path, strings.Join(ids, ", "), orNone(short(rep.Identity)))
		return rep, nil
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Seq < mine[j].Seq })
	for i := 1; i < len(mine); i++ {
		a, b := mine[i-1], mine[i]
		if a.Seq == b.Seq && a.Hash != b.Hash {
			rep.Finding = WitnessConflict
			rep.Problem = fmt.Sprintf("conflict: the witness holds two heads for seq %d with different hashes: %s (%s, from %s) and %s (%s, from %s); a head was forged, or the ledger was rewritten between them",
				a.Seq, short(a.Hash), a.Why, a.Source, short(b.Hash), b.Why, b.Source)
			return rep, nil
		}
	}
	for _, h := range mine {
		if h.Seq > rep.LastSeq {
			break
		}
		var got string
		err := tx.QueryRowContext(ctx, "SELECT hash FROM events WHERE seq = ?", h.Seq).Scan(&got)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			got = "(missing)"
		case err != nil:
			return rep, fmt.Errorf("ledger: check witness: event %d: %w", h.Seq, err)
		}
		if got != h.Hash {
			rep.Finding = WitnessRewritten
			rep.Problem = fmt.Sprintf("rewritten: the witness saw seq %d with hash %s (%s at %s, from %s); the ledger's event %d has hash %s: the chain was recomputed from an edited event at or before it",
				h.Seq, short(h.Hash), h.Why, h.At.Format(time.RFC3339), h.Source, h.Seq, short(got))
			return rep, nil
		}
		rep.Covered = h
	}
	if len(mine) > 0 {
		if h := mine[len(mine)-1]; h.Seq > rep.LastSeq {
			cut := fmt.Sprintf("events %d to %d were cut", rep.LastSeq+1, h.Seq)
			if h.Seq == rep.LastSeq+1 {
				cut = fmt.Sprintf("event %d was cut", h.Seq)
			}
			rep.Finding = WitnessTruncated
			rep.Problem = fmt.Sprintf("truncated: the witness saw seq %d (hash %s, %s at %s, from %s), but the ledger ends at seq %d: %s",
				h.Seq, short(h.Hash), h.Why, h.At.Format(time.RFC3339), h.Source, rep.LastSeq, cut)
			return rep, nil
		}
	}
	rep.OK = true
	return rep, nil
}

// short is the first 16 hex digits of a hash, enough to tell two apart.
func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

func orNone(s string) string {
	if s == "" {
		return "none: the ledger has no events"
	}
	return s
}
