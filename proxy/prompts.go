package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/pin"
)

// promptHandler is the prompts/get handler of one gate.ExposedTool prompt: the
// gate's pipeline decides it by the prompt rules, commits the decision to
// the ledger, and only then forwards an allowed get, with the argument
// bytes that were checked and recorded. A refusal is a JSON-RPC error
// naming the ledger call.
func (p *Proxy) promptHandler(e gate.ExposedItem) server.PromptHandlerFunc {
	pinDigest := e.Item.Digest()
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ctx, done := p.cancels.cancellable(ctx, nil)
		defer done()
		args, err := promptArgs(req.Params.Arguments)
		if err != nil {
			return nil, fmt.Errorf("mcp-guard: %s: arguments: %w", e.Host, err)
		}
		r := p.promptRequest(ctx, e, pinDigest, args)
		params := []byte(`{"name":` + string(jsonString(e.Item.Key)))
		if args != nil {
			params = append(append(params, `,"arguments":`...), args...)
		}
		params = append(params, '}')
		res := p.pipe.Run(ctx, r, p.forwardItem(e.Server, "prompts/get", params, e.Host))
		if res.Status != gate.Done {
			return nil, p.serverFailure(ctx, itemFailure(e.Host, res))
		}
		out, err := hostPromptResult(res.Res)
		if err != nil {
			p.log.Warn("upstream prompt refused", "id", res.CallID, "prompt", e.Host, "err", err)
			return nil, fmt.Errorf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", e.Host, err, res.CallID)
		}
		p.depositFrom(ctx, e.Server, res.Res) // the host gets the server's own bytes
		return out, nil
	}
}

// promptArgs are the bytes of a prompts/get's arguments that are checked,
// recorded and forwarded: their canonical JSON (RFC 8785). mcp-go hands
// the arguments over decoded (a string map); checkPromptRequest has
// refused the request already if the host's own bytes were not one strict
// JSON object of strings, so nothing was lost in decoding. nil: none.
func promptArgs(m map[string]string) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return canon.Marshal(m)
}

// promptRequest is the pipeline's request for a get of exposed prompt e,
// shown to the host with pinDigest, with args.
func (p *Proxy) promptRequest(ctx context.Context, e gate.ExposedItem, pinDigest string, args []byte) *gate.Request {
	host := p.hostOf(ctx)
	return &gate.Request{
		Kind:      gate.KindPrompt,
		Session:   host.gate,
		SessionID: host.lease.ID(),
		Scope:     host.scope,
		Server:    e.Server,
		Name:      e.Item.Key,
		Exposed:   e.Host,
		PinDigest: pinDigest,
		Current: func() (string, bool) {
			now, ok := p.currentItem(pin.Prompts, e.Host)
			return now.Item.Digest(), ok
		},
		Unknown: func() gate.Refusal { return p.itemRefusal(ctx, pin.Prompts, e.Host, args) },
		Args:    args,
		Pending: &host.pending,
	}
}

// checkPromptRequest refuses, and records, a prompts/get whose arguments
// gate does not read as one strict JSON object of strings (J1: duplicate
// names, invalid UTF-8, another type), before mcp-go decodes them into a
// string map that would hide it. A get of an exposed prompt goes through
// the pipeline with the host's own bytes, which gate refuses and records
// out of band; any other is refused before it.
func (p *Proxy) checkPromptRequest(ctx context.Context, params json.RawMessage) error {
	var r struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &r) != nil || len(r.Arguments) == 0 || string(r.Arguments) == "null" {
		return nil // mcp-go answers it
	}
	_, unread := gate.ReadPromptArgs(r.Arguments)
	if unread == nil {
		return nil // mcp-go's string map holds them as they are
	}
	e, ok := p.currentItem(pin.Prompts, r.Name)
	if !ok {
		ref := p.itemRefusal(ctx, pin.Prompts, r.Name, r.Arguments)
		ref.Unread = fmt.Errorf("arguments %w", unread)
		id, _, err := p.pipe.Refuse(ctx, ref)
		if err != nil {
			p.log.Error("refused prompt get not recorded", "prompt", r.Name, "err", err)
			return fmt.Errorf("mcp-guard: prompt %q refused: arguments %v; it could not be recorded in the ledger: the operator's log says why", r.Name, unread)
		}
		p.log.Warn("prompt refused: arguments", "id", id, "prompt", r.Name, "reason", unread)
		return fmt.Errorf("mcp-guard: prompt %q refused: arguments %v (ledger call %d)", r.Name, unread, id)
	}
	res := p.pipe.Run(ctx, p.promptRequest(ctx, e, e.Item.Digest(), r.Arguments), gate.ForwardFunc(func(context.Context, int64, func(json.RawMessage, error)) (json.RawMessage, error) {
		// gate reads these arguments as ReadPromptArgs did: never reached
		return nil, errors.New("mcp-guard: arguments that are not strict strings are never forwarded")
	}))
	if res.Status == gate.Done {
		return fmt.Errorf("mcp-guard: %s refused: arguments %v", e.Host, unread)
	}
	return itemFailure(e.Host, res)
}

// hostPromptResult carries description, messages (each content block as the
// upstream sent it) and _meta from the upstream's raw result to the host.
func hostPromptResult(raw json.RawMessage) (*mcp.GetPromptResult, error) {
	var r struct {
		Description *string `json:"description"`
		Messages    *[]struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Messages == nil {
		return nil, errors.New(`no "messages" array`)
	}
	out := &mcp.GetPromptResult{Messages: make([]mcp.PromptMessage, 0, len(*r.Messages))}
	for i, m := range *r.Messages {
		if len(m.Content) == 0 || string(m.Content) == "null" {
			return nil, fmt.Errorf("messages[%d] has no content", i)
		}
		out.Messages = append(out.Messages, mcp.PromptMessage{Role: mcp.Role(m.Role), Content: rawContent{raw: m.Content}})
	}
	if r.Description != nil {
		out.Description = *r.Description
	}
	if len(r.Meta) > 0 {
		out.Meta = &mcp.Meta{AdditionalFields: rawFields(r.Meta)}
	}
	return out, nil
}
