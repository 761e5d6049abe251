package ledger

import (
	"context"
	"fmt"
)

// Redaction is one credential mcp-guard replaced in a message to the host:
// which (a known secret's server and name, or a found credential's rule),
// how it was written and where. Never the value.
type Redaction struct {
	Server, Name string // the known secret; empty for a found credential
	Rule         string // the found-credential rule
	Encoding     string // raw, json-escaped, percent, hex, base64, found
	At           string // JSON pointer in the message, or "text"
}

// Redacted is what a message to the host had replaced: the ledger
// session of the serve process, the host session, what the message was
// (a method, or the answer to a request id) and each redaction.
type Redacted struct {
	Session, Host, Message string
	Hits                   []Redaction
}

// RecordRedactionLazy queues event "secret.redacted" (subject
// "redact:<session>") for r, without waiting for its commit: the message
// goes to the host meanwhile, already redacted.
func (l *Ledger) RecordRedactionLazy(r Redacted) <-chan error {
	hits := make([]any, len(r.Hits))
	for i, h := range r.Hits {
		m := map[string]any{"encoding": h.Encoding, "at": h.At}
		if h.Rule != "" {
			m["rule"] = h.Rule
		} else {
			m["server"], m["name"] = h.Server, h.Name
		}
		hits[i] = m
	}
	body := map[string]any{"session": r.Session, "host": r.Host, "message": r.Message, "hits": hits}
	return l.WriteLazy(func(tx *Tx) error {
		if _, err := tx.AppendEvent("secret.redacted", "redact:"+r.Session, body); err != nil {
			return fmt.Errorf("ledger: record redaction: %w", err)
		}
		return nil
	})
}

// redactionEventsQuery pages secret.redacted events, newest first,
// through the subject index.
const redactionEventsQuery = `SELECT seq, at, kind, subject, body FROM events INDEXED BY events_subject_seq
	WHERE subject >= 'redact:' AND subject < 'redact;' AND (subject < 'call:' OR subject >= 'call;') AND (? = 0 OR seq < ?)
	ORDER BY seq DESC LIMIT ?`

// RedactionEvents returns up to limit secret.redacted events before seq
// before (0: the newest), newest first. Each is a chain event.
func (l *Ledger) RedactionEvents(ctx context.Context, before int64, limit int) ([]Event, error) {
	rows, err := l.rdb.QueryContext(ctx, redactionEventsQuery, before, before, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("ledger: redaction events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var raw [5]any
		if err := rows.Scan(&raw[0], &raw[1], &raw[2], &raw[3], &raw[4]); err != nil {
			return nil, fmt.Errorf("ledger: redaction events: %w", err)
		}
		out = append(out, decodeEvent(raw))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: redaction events: %w", err)
	}
	return out, nil
}
