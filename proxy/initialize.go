package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// How a host starts: a 2025 host's initialize, a 2026-07-28 host's
// server/discover. Both are answered with what mcp-guard offers every host
// and the instructions it is told (startup.go hostInstructions).

// serverCapabilities is what mcp-guard offers every host: the lists, each
// of which may change, resource subscriptions, log messages and
// completions.
const serverCapabilities = `{"logging":{},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},"completions":{}}`

// serverInfo is mcp-guard named as the server, with its version.
func (p *Proxy) serverInfo() json.RawMessage {
	b, _ := json.Marshal(mcp.Implementation{Name: "mcp-guard", Version: p.opts.Version})
	return b
}

// initialize answers a 2025 host's initialize: the revision it asked for if
// mcp-guard speaks it (else the latest before 2026-07-28), and the host's
// identity and capabilities kept for its session.
func (p *Proxy) initialize(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	if r.modern {
		return nil, removed(r.Method)
	}
	var ps mcp.InitializeParams
	if err := readParams(r, &ps); err != nil {
		return nil, err
	}
	if c := connOf(ctx); c != nil {
		c.peer().markInitialized()
		c.peer().setClientCaps(ps.Capabilities)
	}
	b := append([]byte(`{"protocolVersion":`), jsonString(mcp.NegotiateLegacyVersion(ps.ProtocolVersion))...)
	b = append(append(b, `,"capabilities":`+serverCapabilities+`,"serverInfo":`...), p.serverInfo()...)
	return p.withInstructions(b), nil
}

// discover answers a 2026-07-28 host's server/discover: the revisions
// mcp-guard speaks and what it offers (modernResult adds the envelope).
func (p *Proxy) discover(_ context.Context, r *hostRequest) (json.RawMessage, error) {
	if !r.modern {
		return nil, &rpcError{mcp.METHOD_NOT_FOUND, `"server/discover" requires protocol version ` + mcp.ProtocolVersion20260728 + " or later"}
	}
	versions, _ := json.Marshal(mcp.ValidProtocolVersions)
	b := append([]byte(`{"supportedVersions":`), versions...)
	return p.withInstructions(append(b, `,"capabilities":`+serverCapabilities...)), nil
}

// withInstructions closes b, an open result object, with the instructions
// a host is told, if any.
func (p *Proxy) withInstructions(b []byte) json.RawMessage {
	if in := p.hostInstructions(); in != "" {
		b = append(append(b, `,"instructions":`...), jsonString(in)...)
	}
	return append(b, '}')
}
