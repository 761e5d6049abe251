package upstream

import (
	"encoding/json"
	"errors"
)

// onRequest answers what the upstream asks of its client: ping itself;
// roots/list, sampling and elicitation through Hooks.Relay when
// Hooks.Admit takes them up (the gate decides; its pipeline records each),
// refused otherwise (and Hooks.Refused told). It runs on the read loop, so
// relays go on in their own goroutines (the upstream's tools/call that
// caused them is still pending).
func (u *Client) onRequest(id json.RawMessage, method string, params json.RawMessage) {
	switch method {
	case "ping":
		_ = u.conn.Reply(id, json.RawMessage(`{}`))
		return
	case "roots/list", "sampling/createMessage", "elicitation/create":
		if u.admits(method) {
			go u.relayRequest(id, method, params)
			return
		}
		if u.hooks.Refused != nil {
			u.hooks.Refused(method, params)
		}
	}
	u.log.Info("upstream request refused: capability not offered", "method", method)
	_ = u.conn.ReplyError(id, codeMethodNotFound, "mcp-guard does not offer "+method+" to this server (see allow_sampling, allow_elicitation and roots in its [[server]])")
}

// admits reports whether the hooks take up a request the server makes of
// its client: Admit says so and Relay is there to relay it.
func (u *Client) admits(method string) bool {
	return u.hooks.Admit != nil && u.hooks.Relay != nil && u.hooks.Admit(method)
}

// offered is the capabilities object a Client offers: caps, or {} when
// there are none.
func offered(caps json.RawMessage) json.RawMessage {
	if len(caps) == 0 {
		return json.RawMessage(`{}`)
	}
	return caps
}

func (u *Client) relayRequest(id json.RawMessage, method string, params json.RawMessage) {
	res, err := u.hooks.Relay(method, params)
	if err != nil {
		var rpcErr *RPCError
		if errors.As(err, &rpcErr) {
			_ = u.conn.ReplyError(id, rpcErr.Code, rpcErr.Message)
			return
		}
		_ = u.conn.ReplyError(id, codeInternal, "mcp-guard: "+err.Error())
		return
	}
	_ = u.conn.Reply(id, res)
}
