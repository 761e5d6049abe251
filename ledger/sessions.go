package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// SessionInfo describes the process holding a session.
type SessionInfo struct {
	Kind, Host string
	PID        int
}

// Session is a lease held by one serving process. While it lives, a
// goroutine renews its heartbeat every LeaseTTL/3; calls of a session whose
// heartbeat is older than LeaseTTL, or that ended, count as interrupted (see
// RecoverInterrupted).
type Session struct {
	l    *Ledger
	id   string
	stop chan struct{}
	once sync.Once

	mu     sync.Mutex
	ended  bool
	endErr error
}

func sessionSubject(id string) string { return "session:" + id }

// StartSession records a new session (row and event "session.started") and
// starts its heartbeat.
func (l *Ledger) StartSession(ctx context.Context, info SessionInfo) (*Session, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("ledger: start session: %w", err)
	}
	s := &Session{l: l, id: hex.EncodeToString(raw[:]), stop: make(chan struct{})}
	err := l.Write(ctx, func(tx *Tx) error {
		now := tx.Now().UnixMilli()
		if _, err := tx.Exec(`INSERT INTO sessions (id, kind, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)`,
			s.id, info.Kind, info.Host, int64(info.PID), now, now); err != nil {
			return fmt.Errorf("ledger: start session: %w", err)
		}
		tx.touch("sessions", s.id)
		_, err := tx.AppendEvent("session.started", sessionSubject(s.id), map[string]any{
			"id": s.id, "kind": info.Kind, "host": info.Host, "pid": int64(info.PID),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	l.hbMu.Lock()
	defer l.hbMu.Unlock()
	if l.hbClosed {
		return nil, ErrClosed
	}
	l.hbWG.Add(1)
	go s.heartbeat()
	return s, nil
}

// ID is the session's id (32 hex digits).
func (s *Session) ID() string { return s.id }

func (s *Session) heartbeat() {
	defer s.l.hbWG.Done()
	t := time.NewTicker(max(s.l.opts.LeaseTTL/3, time.Millisecond))
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
		case <-s.l.closing:
		case <-ctx.Done():
		}
		cancel()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed heartbeat is retried on the next tick; a
			// lease that lapses meanwhile makes this session's started
			// calls recoverable as interrupted, which is the safe side.
			_ = s.l.Write(ctx, func(tx *Tx) error {
				_, err := tx.Exec(`UPDATE sessions SET heartbeat_at = ? WHERE id = ? AND ended_at IS NULL`,
					tx.Now().UnixMilli(), s.id)
				return err
			})
		}
	}
}

// End stops the heartbeat and records the session's end (ended_at and event
// "session.ended"). Calling it again returns the first call's result.
func (s *Session) End(ctx context.Context) error {
	s.once.Do(func() { close(s.stop) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return s.endErr
	}
	err := s.l.Write(ctx, func(tx *Tx) error {
		res, err := tx.Exec(`UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL`, tx.Now().UnixMilli(), s.id)
		if err != nil {
			return fmt.Errorf("ledger: end session %s: %w", s.id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("ledger: end session %s: %w", s.id, err)
		} else if n != 1 {
			return fmt.Errorf("ledger: end session %s: already ended: %w", s.id, ErrConflict)
		}
		tx.touch("sessions", s.id)
		_, err = tx.AppendEvent("session.ended", sessionSubject(s.id), map[string]any{"id": s.id})
		return err
	})
	if err == nil || errors.Is(err, ErrConflict) {
		s.ended, s.endErr = true, err
	}
	return err
}

// startedCallsQuery and waitingCallsQuery find the calls of dead sessions;
// they repeat the state index's term so the index is used.
const (
	startedCallsQuery = `SELECT c.id, c.session_id, s.ended_at IS NOT NULL
		FROM calls c JOIN sessions s ON s.id = c.session_id
		WHERE c.state = 'started' AND c.state <> 'done' AND (s.ended_at IS NOT NULL OR s.heartbeat_at < ?)
		ORDER BY c.id`
	waitingCallsQuery = `SELECT c.id, c.session_id, a.id FROM calls c
		JOIN sessions s ON s.id = c.session_id JOIN approvals a ON a.call_id = c.id
		WHERE c.state = 'waiting' AND c.state <> 'done' AND (s.ended_at IS NOT NULL OR s.heartbeat_at < ?)
		ORDER BY c.id`
)

// RecoverInterrupted marks interrupted every call still "started" whose
// session ended or whose heartbeat is older than LeaseTTL, each with its own
// "call.interrupted" event, all in one transaction, and returns their ids.
// In the same transaction it releases the calls such a session left
// "waiting" for the operator (see releaseOrphanedAsks).
func (l *Ledger) RecoverInterrupted(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := l.Write(ctx, func(tx *Tx) error {
		ids = ids[:0]
		now := tx.Now().UnixMilli()
		cutoff := now - l.opts.LeaseTTL.Milliseconds()
		rows, err := tx.Query(startedCallsQuery, cutoff)
		if err != nil {
			return fmt.Errorf("ledger: recover interrupted calls: %w", err)
		}
		type found struct {
			id      int64
			session string
			ended   bool
		}
		var fs []found
		for rows.Next() {
			var f found
			if err := rows.Scan(&f.id, &f.session, &f.ended); err != nil {
				return fmt.Errorf("ledger: recover interrupted calls: %w", err)
			}
			fs = append(fs, f)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("ledger: recover interrupted calls: %w", err)
		}
		rows.Close()
		if err := releaseOrphanedAsks(tx, cutoff, now); err != nil {
			return err
		}
		for _, f := range fs {
			reason := "session " + f.session + " lost its lease (no heartbeat for " + l.opts.LeaseTTL.String() + ")"
			if f.ended {
				reason = "session " + f.session + " ended while the call was running"
			}
			if err := tx.CAS("calls", "id", f.id, StateStarted, StateInterrupted, map[string]any{
				"ended_at": now,
				"error":    reason,
			}); err != nil {
				return err
			}
			if _, err := tx.AppendEvent("call.interrupted", callSubject(f.id), map[string]any{
				"id": f.id, "session": f.session, "reason": reason,
			}); err != nil {
				return err
			}
			ids = append(ids, f.id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// releaseOrphanedAsks ends the calls a dead session (ended, or its lease
// lapsed) left waiting for the operator. Nothing forwards them any more, and
// a waiting call was never forwarded (UseApproval moves it to started first),
// so each is refused, as ReleaseCall does when the host stops waiting, with
// event "approval.released": its approval stays as it is, so an approval
// given, or still to be given, is a grant for an identical re-issue.
func releaseOrphanedAsks(tx *Tx, cutoff, now int64) error {
	rows, err := tx.Query(waitingCallsQuery, cutoff)
	if err != nil {
		return fmt.Errorf("ledger: release orphaned asks: %w", err)
	}
	type found struct {
		call, approval int64
		session        string
	}
	var fs []found
	for rows.Next() {
		var f found
		if err := rows.Scan(&f.call, &f.session, &f.approval); err != nil {
			rows.Close()
			return fmt.Errorf("ledger: release orphaned asks: %w", err)
		}
		fs = append(fs, f)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fmt.Errorf("ledger: release orphaned asks: %w", err)
	}
	rows.Close()
	for _, f := range fs {
		reason := "session " + f.session + " stopped while the call waited for the operator; it was not made"
		if err := tx.CAS("calls", "id", f.call, StateWaiting, StateRefused, map[string]any{"ended_at": now, "reason": reason}); err != nil {
			return err
		}
		if _, err := tx.AppendEvent("approval.released", approvalSubject(f.approval), map[string]any{
			"id": f.approval, "call": f.call, "reason": reason}); err != nil {
			return err
		}
	}
	return nil
}
