package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

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

// resourceRead answers resources/read of an exposed resource, or of a URI
// an exposed template produces (readable): the gate decides by the
// resource rules on the URI actually read (mapped back to the upstream's),
// the decision is committed to the ledger, and only then is an allowed
// read forwarded; the host gets the server's own bytes, URIs mapped. A
// refusal is a JSON-RPC error naming the ledger call. A read of any other
// URI is refused and recorded, nothing forwarded.
func (p *Proxy) resourceRead(ctx context.Context, req *hostRequest) (json.RawMessage, error) {
	var ps struct {
		URI string `json:"uri"`
	}
	if err := readParams(req, &ps); err != nil {
		return nil, err
	}
	hostURI := ps.URI
	e, ok, withheld := p.readable(hostURI)
	if !ok {
		p.recordUnknownItem(ctx, pin.Resources, hostURI, nil)
		if withheld != "" { // the host may read others of its template's
			return nil, &rpcError{mcp.RESOURCE_NOT_FOUND, fmt.Sprintf("mcp-guard: %s is not exposed: %s", hostURI, withheld)}
		}
		return nil, &rpcError{mcp.RESOURCE_NOT_FOUND, fmt.Sprintf("resource %q not found: mcp-guard shows no resource or template that gives it", hostURI)}
	}
	_, uri, _ := p.upstreamURI(hostURI)
	pinDigest := e.Item.Digest()
	host := p.hostOf(ctx)
	r := gate.Request{
		Kind:      gate.KindResource,
		Session:   host.gate,
		SessionID: host.lease.ID(),
		Scope:     host.scope,
		Server:    e.Server,
		Name:      uri,
		Exposed:   hostURI,
		PinDigest: pinDigest,
		ItemKind:  e.Item.Kind,
		Listed:    e.Host,
		Pending:   &host.pending,
	}
	res := p.runItem(ctx, &r)
	switch res.Status {
	case gate.Done:
	case gate.Withdrawn: // named as the host listed it: a resource or a template
		return nil, fmt.Errorf("mcp-guard: %s was withdrawn: its definition changed and waits for the operator", e.Host)
	default:
		return nil, itemFailure(hostURI, res)
	}
	raw, err := hostContents(e.Server, res.Res)
	if err != nil {
		p.log.Warn("upstream resource refused", "id", res.CallID, "uri", hostURI, "err", err)
		return nil, fmt.Errorf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", hostURI, err, res.CallID)
	}
	return p.fromServer(e.Server, raw), nil
}

// hostContents is an upstream's raw read result as the host gets it:
// each content block's uri mapped to the host URI (gate.HostURI) in place,
// every other byte the server's. It fails for a result with no "contents"
// array of objects.
func hostContents(server string, res json.RawMessage) (json.RawMessage, error) {
	var r struct {
		Contents *[]json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	if r.Contents == nil {
		return nil, errors.New(`no "contents" array`)
	}
	arr := []byte{'['}
	for i, c := range *r.Contents {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(c, &f); err != nil || f == nil {
			return nil, fmt.Errorf("contents[%d] is not an object", i)
		}
		var uri string
		if json.Unmarshal(f["uri"], &uri) == nil && uri != "" {
			if c, _ = replaceMember(c, "uri", jsonString(gate.HostURI(server, uri))); c == nil {
				return nil, fmt.Errorf("contents[%d]: uri not rewritten", i)
			}
		}
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, c...)
	}
	arr = append(arr, ']')
	raw, _ := replaceMember(res, "contents", arr)
	if raw == nil {
		return nil, errors.New(`"contents" not rewritten`)
	}
	return raw, nil
}
