package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
)

// upstreamURI maps a host URI back to its server (one of the configured
// upstreams) and the upstream's URI.
func (p *Proxy) upstreamURI(host string) (server, uri string, ok bool) {
	server, uri, ok = gate.SplitHostURI(host)
	if !ok || !slices.Contains(p.order, server) {
		return "", "", false
	}
	return server, uri, true
}

// resourceHandler reads one gate.ExposedTool resource, or a URI one gate.ExposedTool template
// produces: the gate decides by the resource rules on the URI actually
// read (mapped back to the upstream's), the decision is committed to the
// ledger, and only then is an allowed read forwarded. A refusal is a
// JSON-RPC error naming the ledger call.
func (p *Proxy) resourceHandler(e gate.ExposedItem) server.ResourceHandlerFunc {
	pinDigest := e.Item.Digest()
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		ctx, done := p.cancels.cancellable(ctx, nil)
		defer done()
		hostURI := req.Params.URI
		srv, uri, ok := p.upstreamURI(hostURI)
		if !ok || srv != e.Server {
			p.recordUnknownItem(ctx, pin.Resources, hostURI, nil)
			return nil, fmt.Errorf("mcp-guard: %q is not a resource mcp-guard exposes", hostURI)
		}
		if h, hidden := p.hiddenItem(pin.Resources, hostURI); hidden && e.Item.Kind == pin.Templates {
			// A listed resource that is withheld is not read through a template.
			p.recordUnknownItem(ctx, pin.Resources, hostURI, nil)
			return nil, fmt.Errorf("mcp-guard: %s is not exposed: %s", hostURI, h.Why)
		}
		host := p.hostOf(ctx)
		r := gate.Request{
			Kind:      gate.KindResource,
			Session:   host.gate,
			SessionID: host.lease.ID(),
			Scope:     host.scope,
			Server:    srv,
			Name:      uri,
			Exposed:   hostURI,
			PinDigest: pinDigest,
			Current: func() (string, bool) {
				now, ok := p.currentItem(e.Item.Kind, e.Host)
				return now.Item.Digest(), ok
			},
			Unknown: func() gate.Refusal { return p.itemRefusal(ctx, pin.Resources, hostURI, nil) },
			Pending: &host.pending,
		}
		res := p.pipe.Run(ctx, &r, p.forwardItem(srv, "resources/read", json.RawMessage(`{"uri":`+string(jsonString(uri))+`}`), hostURI))
		switch res.Status {
		case gate.Done:
		case gate.Withdrawn: // named as the host listed it: a resource or a template
			return nil, fmt.Errorf("mcp-guard: %s was withdrawn: its definition changed and waits for the operator", e.Host)
		default:
			return nil, p.serverFailure(ctx, itemFailure(hostURI, res))
		}
		out, raw, err := hostContents(srv, res.Res)
		if err != nil {
			p.log.Warn("upstream resource refused", "id", res.CallID, "uri", hostURI, "err", err)
			return nil, fmt.Errorf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", hostURI, err, res.CallID)
		}
		p.depositFrom(ctx, srv, raw) // the host gets the server's own bytes, URIs mapped
		return out, nil
	}
}

// rawResourceContents is one content block of a read passed to the host as
// the upstream sent it (with its uri mapped); embedding TextResourceContents
// satisfies mcp-go's sealed interface, MarshalJSON emits the block.
type rawResourceContents struct {
	mcp.TextResourceContents
	raw json.RawMessage
}

func (r rawResourceContents) MarshalJSON() ([]byte, error) { return r.raw, nil }

// hostContents carries each content block of an upstream's raw read result
// to the host, its uri mapped to the host URI (gate.HostURI) in place; raw is
// the whole result so, every other byte the server's.
func hostContents(server string, res json.RawMessage) (out []mcp.ResourceContents, raw json.RawMessage, err error) {
	var r struct {
		Contents *[]json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, nil, err
	}
	if r.Contents == nil {
		return nil, nil, errors.New(`no "contents" array`)
	}
	out = make([]mcp.ResourceContents, 0, len(*r.Contents))
	arr := []byte{'['}
	for i, c := range *r.Contents {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(c, &f); err != nil || f == nil {
			return nil, nil, fmt.Errorf("contents[%d] is not an object", i)
		}
		var uri string
		if json.Unmarshal(f["uri"], &uri) == nil && uri != "" {
			if c, _ = replaceMember(c, "uri", jsonString(gate.HostURI(server, uri))); c == nil {
				return nil, nil, fmt.Errorf("contents[%d]: uri not rewritten", i)
			}
		}
		out = append(out, rawResourceContents{raw: c})
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, c...)
	}
	arr = append(arr, ']')
	if raw, _ = replaceMember(res, "contents", arr); raw == nil {
		return nil, nil, errors.New(`"contents" not rewritten`)
	}
	return out, raw, nil
}
