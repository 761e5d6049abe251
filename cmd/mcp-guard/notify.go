package main

import (
	"log/slog"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/notify"
)

// startNotify starts the desktop notifier [notify] desktop asks for; nil
// when it is off. Unset, it is on where this machine can show a
// notification (notify.Available): a serve started from a desktop session,
// not one on a server, in a container or in CI.
func startNotify(cfg *config.Config, env config.EnvFunc, log *slog.Logger) *notify.Notifier {
	how, ok := notify.Available(env)
	on := ok
	if d := cfg.Notify.Desktop; d != nil {
		on = *d
	}
	if !on {
		return nil
	}
	n, err := notify.New(env, log)
	if err != nil {
		log.Warn("notify.desktop is true, but no desktop notification can be sent from here; requests still wait for `mcp-guard approvals` or `watch`", "why", how)
		return nil
	}
	return n
}

// waitingFunc is what the pipeline calls when a request starts waiting:
// it queues n's notification and returns at once; nil when n is.
func waitingFunc(n *notify.Notifier) func(gate.Waiting) {
	if n == nil {
		return nil
	}
	return func(w gate.Waiting) {
		n.Waiting(notify.Waiting{Kind: w.Kind, Server: w.Server, Name: w.Name, Approval: w.Approval})
	}
}
