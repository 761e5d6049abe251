package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Protocol 2026-07-28, the stateless revision: no initialize and no
// session; the client learns the server with server/discover, and every
// request carries the protocol version, the client's identity and its
// capabilities in _meta. A server asks the client for input (sampling,
// elicitation, roots) not with requests of its own but by answering
// input_required; the client retries with the answers and the server's
// requestState.

// The values of Spec.Protocol.
const (
	ProtocolLegacy = "legacy"     // initialize at ProtocolVersion (the default)
	ProtocolModern = "2026-07-28" // server/discover, stateless
	ProtocolAuto   = "auto"       // server/discover; initialize when the server does not know it
)

// maxInputRounds bounds the input_required rounds of one call, as both Go
// SDKs do.
const maxInputRounds = 10

// autoDiscoverWait bounds the server/discover probe of protocol = "auto":
// a legacy server may ignore a request before initialize.
const autoDiscoverWait = 5 * time.Second

// handshake starts the session the way spec.Protocol says.
func (u *Client) handshake(ctx context.Context, protocol string) error {
	switch protocol {
	case ProtocolModern:
		return u.discover(ctx)
	case ProtocolAuto:
		dctx, cancel := context.WithTimeout(ctx, autoDiscoverWait)
		err := u.discover(dctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		u.log.Info("server/discover failed; speaking "+ProtocolVersion+" (initialize)", "err", err)
		return u.initialize(ctx)
	}
	return u.initialize(ctx)
}

// modernMeta is the _meta every request of the stateless protocol carries.
func (u *Client) modernMeta() json.RawMessage {
	return json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"` + ProtocolModern +
		`","io.modelcontextprotocol/clientInfo":{"name":"mcp-guard","version":` + string(jsonString(u.version)) +
		`},"io.modelcontextprotocol/clientCapabilities":` + string(offered(u.caps)) + `}`)
}

// discover learns the server with server/discover and, if it speaks
// 2026-07-28, makes every later request of u a stateless one.
func (u *Client) discover(ctx context.Context) error {
	meta := u.modernMeta()
	res, err := u.call(ctx, "server/discover", json.RawMessage(`{"_meta":`+string(meta)+`}`))
	if err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      struct {
			Tools   json.RawMessage `json:"tools"`
			Logging json.RawMessage `json:"logging"`
		} `json:"capabilities"`
		Instructions json.RawMessage `json:"instructions"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("server/discover: bad result: %w", err)
	}
	if !slices.Contains(r.SupportedVersions, ProtocolModern) {
		return fmt.Errorf("server/discover: the server supports %q, not %s", r.SupportedVersions, ProtocolModern)
	}
	u.instructions = []byte(`""`)
	if len(r.Instructions) > 0 && string(r.Instructions) != "null" {
		var s string
		if err := json.Unmarshal(r.Instructions, &s); err != nil {
			return fmt.Errorf("server/discover: instructions is not a string")
		}
		u.instructions = r.Instructions
	}
	u.protocolVersion = ProtocolModern
	if u.setVersion != nil {
		u.setVersion(ProtocolModern)
	}
	u.meta = meta
	u.hasTools = len(r.Capabilities.Tools) > 0 && string(r.Capabilities.Tools) != "null"
	u.hasLogging = len(r.Capabilities.Logging) > 0 && string(r.Capabilities.Logging) != "null"
	u.content = parseContentCaps(res)
	go u.listen()
	return nil
}

// listen holds a subscriptions/listen request open for the connection's
// life: the stateless protocol's server sends its list_changed
// notifications only to a client listening, and without them a server's
// changed definitions would not be seen (nor withdrawn) until a restart.
func (u *Client) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-u.dead
		cancel()
	}()
	params := u.withMeta(json.RawMessage(`{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}`))
	r := reopen{b: u.limits.Retry}
	for {
		began := time.Now()
		_, err := u.conn.Call(ctx, "subscriptions/listen", params)
		if ctx.Err() != nil || u.closing.Load() || u.conn.Err() != nil {
			return
		}
		if !u.relisten {
			u.log.Warn("subscriptions/listen ended: the server's list changes are seen at its next start", "err", err)
			return
		}
		// Over HTTP the listen is one long POST a server or a gateway may
		// end: listen again, and list everything again once listening
		// (onNotify), for what changed in between. A listen that ends
		// sooner than the wait before it waits longer next time (reopen).
		wait := r.next(time.Since(began), 0)
		u.log.Warn("subscriptions/listen ended; listening again", "err", err, "in", wait)
		if !sleep(ctx, wait) {
			return
		}
	}
}

// Modern reports whether u speaks the stateless protocol (2026-07-28).
func (u *Client) Modern() bool { return u.meta != nil }

// withMeta is params with the stateless protocol's _meta added (merged
// into a _meta params already has); params as they are for a legacy
// server.
func (u *Client) withMeta(params json.RawMessage) json.RawMessage {
	if u.meta == nil {
		return params
	}
	var ps map[string]json.RawMessage
	if len(params) == 0 || string(params) == "null" || json.Unmarshal(params, &ps) != nil || ps == nil {
		ps = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if old, ok := ps["_meta"]; ok {
		_ = json.Unmarshal(old, &meta)
	}
	var ours map[string]json.RawMessage
	_ = json.Unmarshal(u.meta, &ours)
	for k, v := range ours {
		meta[k] = v
	}
	b, _ := json.Marshal(meta)
	ps["_meta"] = b
	out, err := json.Marshal(ps)
	if err != nil {
		return params
	}
	return out
}

// inputRequired reads res as an input_required result: the server's
// requests for the client, and its requestState.
func inputRequired(res json.RawMessage) (reqs map[string]json.RawMessage, state json.RawMessage, ok bool) {
	var r struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	if json.Unmarshal(res, &r) != nil || r.ResultType != "input_required" {
		return nil, nil, false
	}
	return r.InputRequests, r.RequestState, true
}

// answerInputs gets the client's answers to a server's input requests:
// each relayed through Hooks.Relay as the server-to-client request it
// stands for (recorded, and asked of the host, by the proxy), when the
// server's config allows it.
func (u *Client) answerInputs(reqs map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(reqs))
	for id, raw := range reqs {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("input request %q: %w", id, err)
		}
		switch r.Method {
		case "roots/list", "sampling/createMessage", "elicitation/create":
		default:
			return nil, fmt.Errorf("input request %q: method %q is not one a client answers", id, r.Method)
		}
		if !u.admits(r.Method) {
			if u.hooks.Refused != nil {
				u.hooks.Refused(r.Method, r.Params)
			}
			return nil, fmt.Errorf("the server asked for %s, which its config does not allow (see allow_sampling, allow_elicitation and roots in its [[server]])", r.Method)
		}
		res, err := u.hooks.Relay(r.Method, r.Params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Method, err)
		}
		out[id] = res
	}
	return out, nil
}

// inputMethods are the requests during which a 2026-07-28 server's
// input_required is relayed (to the host whose request it serves) and the
// request retried; during any other it fails the request, in words.
var inputMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// callRounds sends a request (params without their closing brace) and,
// while the server answers input_required, answers its input requests and
// retries with them and its requestState.
func (u *Client) callRounds(ctx context.Context, method string, params []byte, late func(json.RawMessage, error)) (json.RawMessage, error) {
	retry := ""
	for round := 0; ; round++ {
		res, err := u.conn.CallLate(ctx, method, append(append(append([]byte(nil), params...), retry...), '}'), u.limits.CallTimeout, late)
		if err != nil || u.meta == nil {
			return res, err
		}
		reqs, state, ok := inputRequired(res)
		if !ok {
			return res, nil
		}
		if round == maxInputRounds {
			return nil, fmt.Errorf("upstream %q asked for input more than %d times in one call", u.name, maxInputRounds)
		}
		answers, err := u.answerInputs(reqs)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(answers)
		if err != nil {
			return nil, err
		}
		retry = `,"inputResponses":` + string(b)
		if len(state) > 0 && string(state) != "null" {
			retry += `,"requestState":` + string(state)
		}
		if len(answers) == 0 && len(state) == 0 {
			return nil, errors.New("the server answered input_required with nothing to answer")
		}
	}
}
