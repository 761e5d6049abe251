package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/mcp-guard/mcp-guard/pin"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// Limits bound what one upstream may send, how long mcp-guard waits, and
// what the host side holds.
type Limits struct {
	MessageBytes int           // longest line an upstream may send
	CallTimeout  time.Duration // a tools/call
	StartTimeout time.Duration // spawn, initialize and the first tools/list
	ListPages    int           // tools/list pages walked at most
	ListBytes    int           // tools/list bytes read at most, all pages together
	StderrBytes  int64         // per-server stderr log size before it rotates
	ResultBytes  int           // largest tools/call result passed to the host
	ApprovalWait time.Duration // how long an ask holds the host's request
	Pending      int           // asks a host session may have waiting at once
	GrantTTL     time.Duration // how long a late approval can be used by an identical re-issue
	Retry        up.Backoff    // how often a server may make the proxy start, list or reopen it again
}

func (l Limits) withDefaults() Limits {
	ul := l.upstream().WithDefaults()
	l.MessageBytes, l.CallTimeout, l.StartTimeout = ul.MessageBytes, ul.CallTimeout, ul.StartTimeout
	l.ListPages, l.ListBytes, l.StderrBytes, l.Retry = ul.ListPages, ul.ListBytes, ul.StderrBytes, ul.Retry
	if l.ResultBytes <= 0 {
		l.ResultBytes = 1 << 20
	}
	if l.ApprovalWait <= 0 {
		l.ApprovalWait = 50 * time.Second
	}
	if l.Pending <= 0 {
		l.Pending = 8
	}
	if l.GrantTTL <= 0 {
		l.GrantTTL = 10 * time.Minute
	}
	return l
}

// upstream is the part of l the upstream client enforces.
func (l Limits) upstream() up.Limits {
	return up.Limits{MessageBytes: l.MessageBytes, CallTimeout: l.CallTimeout, StartTimeout: l.StartTimeout,
		ListPages: l.ListPages, ListBytes: l.ListBytes, StderrBytes: l.StderrBytes, Retry: l.Retry}
}

// upstream is one connected server as the proxy follows it: the client,
// and the host-side state kept for it.
type upstream struct {
	*up.Client
	name     string
	log      *slog.Logger
	access   up.ClientAccess
	callers  callers   // host requests in flight to this server
	logs     logBucket // rate of its log messages relayed
	refusals logBucket // rate of refused client requests recorded
}

// startUpstream connects one upstream with the proxy's hooks: what it asks
// of the host is relayed through the gate's pipeline (clientreq.go), its
// refused requests recorded, its log messages relayed (logging.go). p may
// be nil (ListTools): then nothing is relayed, recorded or passed on.
func startUpstream(ctx context.Context, p *Proxy, spec up.Spec, limits Limits, logDir, version string, log *slog.Logger) (*upstream, error) {
	u := &upstream{name: spec.Name, log: log.With("server", spec.Name), access: spec.Access}
	var hooks up.Hooks
	if p != nil {
		hooks = up.Hooks{
			Relay: func(method string, params json.RawMessage) (json.RawMessage, error) {
				return p.relay(u, method, params)
			},
			Refused: func(method string, params json.RawMessage) { p.onRefused(u, method, params) },
			Log:     func(params json.RawMessage) { p.relayLog(u, params) },
		}
	}
	opts := up.Options{Limits: limits.upstream(), LogDir: logDir, Version: version, Log: log, Hooks: hooks}
	if p != nil && p.opts.Secrets != nil {
		opts.Redact = func(b []byte) []byte { out, _ := p.opts.Secrets.RedactText(b); return out }
	}
	c, err := up.Start(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	u.Client = c
	return u, nil
}

// listTools walks every tools/list page of u, within the list caps.
func listTools(ctx context.Context, u *upstream) ([]pin.Tool, error) {
	if !u.HasTools() {
		return nil, nil
	}
	var tools []pin.Tool
	err := u.List(ctx, "tools/list", func(res json.RawMessage) (string, error) {
		pg, err := pin.SplitPage(res)
		if err != nil {
			return "", err
		}
		tools = append(tools, pg.Tools...)
		return pg.NextCursor, nil
	})
	if err != nil {
		return nil, err
	}
	return tools, nil
}
