package ledger

import (
	"context"
	"fmt"
)

// UpstreamStart is how one connection to an upstream server was made: a
// stdio server's process and the sandbox it runs in, or the HTTP transport.
type UpstreamStart struct {
	Server      string
	Transport   string   // "stdio", "http" or "sse"
	PID         int      // a stdio server's process; 0 for HTTP
	Sandbox     string   // the effective sandbox policy's digest; "" when not sandboxed
	LandlockABI int      // the Landlock ABI a sandboxed server was started under
	NotEnforced []string // what a best-effort sandbox could not enforce
	Session     string   // the ledger session of the serve process that started it
}

// RecordUpstreamStart records, as event "upstream.started" in the chain,
// that a serve process started (or connected to) an upstream, and under
// which sandbox: what confined the server while it answered the calls
// recorded after it.
func (l *Ledger) RecordUpstreamStart(ctx context.Context, s UpstreamStart) error {
	if s.Server == "" || s.Transport == "" {
		return fmt.Errorf("ledger: record upstream start: server and transport are required")
	}
	body := map[string]any{
		"server":    s.Server,
		"transport": s.Transport,
		"session":   s.Session,
	}
	if s.PID > 0 {
		body["pid"] = int64(s.PID)
	}
	if s.Sandbox != "" {
		missing := make([]any, len(s.NotEnforced))
		for i, m := range s.NotEnforced {
			missing[i] = m
		}
		body["sandbox"] = s.Sandbox
		body["landlock_abi"] = int64(s.LandlockABI)
		body["not_enforced"] = missing
	}
	err := l.Write(ctx, func(tx *Tx) error {
		_, err := tx.AppendEvent("upstream.started", "upstream:"+s.Server, body)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: record upstream start %s: %w", s.Server, err)
	}
	return nil
}
