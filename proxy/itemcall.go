package proxy

import (
	"context"
	"errors"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
)

// A prompts/get or resources/read is a call like a tools/call: the gate's
// pipeline decides it, commits it to the ledger before it is forwarded and
// records its outcome whatever the host does. These are the MCP parts they
// share.

// runItem runs a get or read r through the gate's pipeline, which
// forwards it to its server: the name (or URI) and arguments it checked
// and recorded.
func (p *Proxy) runItem(ctx context.Context, r *gate.Request) gate.Result {
	if !modernHost(ctx) {
		// A sampling or elicitation request the upstream makes while
		// serving it (or, from a 2026-07-28 upstream, its
		// input_required) is relayed to this host, as during a
		// tools/call. A 2026-07-28 host cannot be sent one: the
		// upstream's request is refused, in words.
		ctx = relayable(ctx)
	}
	return p.pipe.Run(ctx, r, nil)
}

// itemFailure is the JSON-RPC error a host gets for a get or read of name
// that the pipeline did not answer with a result.
func itemFailure(name string, res gate.Result) error {
	if res.Status == gate.Failed {
		return hostFailure(name, res.CallID, res.Err)
	}
	return errors.New(res.Message)
}

// recordUnknownItem records a get or read of a name or URI the host was
// never shown (or that was withdrawn) before it is refused. Nothing was
// forwarded. args are a get's arguments.
func (p *Proxy) recordUnknownItem(ctx context.Context, kind pin.ItemKind, name string, args []byte) {
	id, start, err := p.pipe.Refuse(ctx, p.itemRefusal(ctx, kind, name, args))
	if err != nil {
		p.log.Error("refused "+kind.Noun()+" not recorded", "name", name, "err", err)
		return
	}
	p.log.Warn(kind.Noun()+" refused: nothing of that name is exposed", "id", id, "name", name, "reason", start.Reason)
}

// itemRefusal is what the view knows of a get or read of a name or URI
// that is not exposed: the upstream URI a read names, and the item and why
// it is not shown, when the view withholds one.
func (p *Proxy) itemRefusal(ctx context.Context, kind pin.ItemKind, name string, args []byte) gate.Refusal {
	server, uri, _ := p.upstreamURI(name)
	return p.exposed.ItemRefusal(p.hostOf(ctx).lease.ID(), kind, name, args, server, uri)
}
