package proxy

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/pin"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// upstream is one connected server as the proxy follows it: the client,
// and the host-side state kept for it.
type upstream struct {
	*up.Client
	name     string
	log      *slog.Logger
	logs     logBucket // rate of its log messages relayed
	refusals logBucket // rate of refused client requests recorded
}

// startUpstream connects one upstream with the proxy's hooks: what it asks
// of the host is relayed through the gate's pipeline (clientreq.go), its
// refused requests recorded, its log messages relayed (logging.go). p may
// be nil (ListTools): then nothing is relayed, recorded or passed on.
func startUpstream(ctx context.Context, p *Proxy, spec up.Spec, limits config.Limits, logDir, version string, log *slog.Logger) (*upstream, error) {
	u := &upstream{name: spec.Name, log: log.With("server", spec.Name)}
	var hooks up.Hooks
	if p != nil {
		hooks = up.Hooks{
			Admit: func(method string) bool { return p.opts.Gate.AdmitsClient(u.name, method) },
			Relay: func(method string, params json.RawMessage) (json.RawMessage, error) {
				return p.relay(u, method, params)
			},
			Refused: func(method string, params json.RawMessage) { p.onRefused(u, method, params) },
			Log:     func(params json.RawMessage) { p.relayLog(u, params) },
		}
	}
	opts := up.Options{Limits: limits, LogDir: logDir, Version: version, Log: log, Hooks: hooks}
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
