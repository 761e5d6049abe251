package main

import (
	"context"
	"log/slog"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// dryRun decides tool calls as serve would, starting, forwarding and
// recording nothing: the view serve computes (the pins standing in for the
// servers' listings), then serve's pipeline up to its commit. explain and
// test both ask it.
type dryRun struct {
	cfg     *config.Config
	servers []string // the configured servers, in config order
	pins    []ledger.Pin
	g       *gate.Gate
	pipe    *gate.Pipeline
}

// dryCall is what serve would do with one call.
type dryCall struct {
	pin      ledger.Pin // the tool's pin; Server is "" when it has none
	shown    gate.ToolReport
	schema   *pin.Schema // the pinned inputSchema, when the tool is exposed
	listed   bool        // some pin of the tool exists
	withheld string      // why the host is not shown the tool; "" when it is
	res      gate.Result
	start    ledger.CallStart // what serve would record
}

func newDryRun(cfg *config.Config, led *ledger.Ledger, pins []ledger.Pin, env config.EnvFunc) *dryRun {
	d := &dryRun{cfg: cfg, servers: cfg.ServerNames(), pins: pins, g: newGate(cfg)}
	d.pipe = &gate.Pipeline{Gate: d.g, Ledger: led, Secrets: newRedactor(cfg, env, slog.New(slog.DiscardHandler))}
	return d
}

// decide is serve's decision for server/tool called with args as the next
// call of sess, in scope (whose labels the flow stage reads from the
// ledger) or, with held set, holding those labels.
func (d *dryRun) decide(ctx context.Context, sess *gate.Session, server, tool string, args []byte, scope string, held *[]ledger.Label) dryCall {
	c := d.view(server, tool)
	if c.withheld != "" {
		// serve refuses a name it does not show before any rule, and
		// records the refusal gate builds.
		ref := gate.Refusal{Kind: gate.KindTool, Exposed: gate.ExposedName(server, tool)}
		if c.listed {
			ref.Server, ref.Name, ref.Hidden = server, tool, c.withheld
		}
		c.start = ref.Row()
		c.res = gate.Result{Status: gate.Withdrawn, Message: "the tool is not exposed: " + c.withheld}
		return c
	}
	c.res, c.start = d.pipe.Explain(ctx, &gate.Request{Kind: gate.KindTool, Session: sess, Server: server, Name: tool,
		Exposed: c.shown.Exposed, PinDigest: c.pin.Digest, Schema: c.schema, Args: args, Scope: scope, Labels: held})
	return c
}

// view is the tool's pin and what serve would show the host of it.
func (d *dryRun) view(server, tool string) dryCall {
	var c dryCall
	for _, p := range d.pins {
		if p.Server == server && p.Tool == tool {
			c.pin = p
		}
	}
	c.shown, c.schema, c.listed = gate.ToolFromPins(d.servers, d.pins, d.g, proxy.Presenter{}, server, tool)
	switch {
	case !c.listed:
		c.withheld = "it has no pin: no serve has listed it, or serve refused its definition (mcp-guard tools says which)"
	case c.shown.Exposed == "":
		c.withheld = c.shown.Hidden
	}
	return c
}
