package upstream

import "encoding/json"

// Access is what mcp-guard does with one kind of request an upstream makes
// of the host.
type Access int

const (
	AccessDeny  Access = iota // not offered at initialize; refused
	AccessAllow               // relayed to the host whose call caused it
	AccessAsk                 // relayed once the operator approves it
)

func (a Access) String() string {
	switch a {
	case AccessAllow:
		return "allow"
	case AccessAsk:
		return "ask"
	}
	return "deny"
}

// ClientAccess is what an upstream may ask of the host through mcp-guard.
// The zero value offers nothing: the capabilities are not announced at
// initialize, and such requests are refused.
type ClientAccess struct {
	Sampling    Access   // sampling/createMessage, relayed to the host whose call caused it
	Elicitation Access   // elicitation/create (form and URL mode) likewise
	Roots       []string // answer roots/list with exactly these URIs; the host's roots are never passed on
}

// Of is the access for a request method.
func (a ClientAccess) Of(method string) Access {
	switch method {
	case "sampling/createMessage":
		return a.Sampling
	case "elicitation/create":
		return a.Elicitation
	case "roots/list":
		if a.Roots != nil {
			return AccessAllow
		}
	}
	return AccessDeny
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

// capabilities is the client capabilities object offered at initialize.
func (a ClientAccess) capabilities() string {
	caps := map[string]any{}
	if a.Sampling != AccessDeny {
		caps["sampling"] = map[string]any{}
	}
	if a.Elicitation != AccessDeny {
		caps["elicitation"] = map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	}
	if a.Roots != nil {
		caps["roots"] = map[string]any{"listChanged": false}
	}
	b, _ := json.Marshal(caps)
	return string(b)
}
