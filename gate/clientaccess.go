package gate

import (
	"encoding/json"

	"github.com/mcp-guard/mcp-guard/config"
)

// ClientAccess is what one upstream may ask of the host through mcp-guard:
// its [[server]]'s allow_sampling, allow_elicitation and roots. The zero
// value offers nothing: no capability is offered at initialize, and every
// such request is refused. The gate alone decides by it (AdmitsClient, the
// pipeline's config stage); upstream carries the bytes.
type ClientAccess struct {
	Sampling    config.Access // sampling/createMessage, relayed to the host whose call caused it
	Elicitation config.Access // elicitation/create (form and URL mode) likewise
	Roots       []string      // answer roots/list with exactly these URIs; the host's roots are never passed on
}

// Of is the access for a request method.
func (a ClientAccess) Of(method string) config.Access {
	switch method {
	case "sampling/createMessage":
		return a.Sampling
	case "elicitation/create":
		return a.Elicitation
	case "roots/list":
		if a.Roots != nil {
			return config.AccessAllow
		}
	}
	return config.AccessDeny
}

// Capabilities is the client capabilities object offered to the server at
// initialize: what it may ask, and nothing else.
func (a ClientAccess) Capabilities() json.RawMessage {
	caps := map[string]any{}
	if a.Sampling != config.AccessDeny {
		caps["sampling"] = map[string]any{}
	}
	if a.Elicitation != config.AccessDeny {
		caps["elicitation"] = map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	}
	if a.Roots != nil {
		caps["roots"] = map[string]any{"listChanged": false}
	}
	b, _ := json.Marshal(caps) // maps of strings always encode
	return b
}

// RootsResult is the answer to roots/list: exactly the configured roots,
// never the host's.
func (a ClientAccess) RootsResult() json.RawMessage {
	roots := make([]map[string]string, 0, len(a.Roots))
	for _, r := range a.Roots {
		roots = append(roots, map[string]string{"uri": r})
	}
	b, _ := json.Marshal(map[string]any{"roots": roots})
	return b
}

// WithClientAccess gives the gate what each server may ask of the host, by
// server name; a server not named may ask nothing.
func WithClientAccess(access map[string]ClientAccess) Option {
	return func(g *Gate) { g.access = access }
}

// ClientAccess is what server may ask of the host.
func (g *Gate) ClientAccess(server string) ClientAccess { return g.access[server] }

// AdmitsClient reports whether server's request method is taken up at all
// (relayed, or held for the operator) rather than refused at once: the
// question its connection asks on its read loop, where a refusal is
// answered -32601 without waiting for the ledger.
func (g *Gate) AdmitsClient(server, method string) bool {
	return g.access[server].Of(method) != config.AccessDeny
}
