package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/pin"
)

// promptGet answers prompts/get. A prompt the host is shown is decided by
// the prompt rules in the gate's pipeline, the decision committed to the
// ledger, and only then an allowed get forwarded, with the argument bytes
// that were checked and recorded; the host gets the server's own result.
// A get of any other name is refused and recorded, nothing forwarded.
// The arguments are read once, by gate (J1: one strict JSON object of
// strings); a get whose arguments it does not read so is refused and
// recorded, never forwarded.
func (p *Proxy) promptGet(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	var ps struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := readParams(r, &ps); err != nil {
		return nil, err
	}
	var args []byte
	if len(ps.Arguments) > 0 && string(ps.Arguments) != "null" {
		doc, unread := gate.ReadPromptArgs(ps.Arguments)
		if unread != nil {
			return nil, p.refusePromptArgs(ctx, ps.Name, ps.Arguments, unread)
		}
		var err error
		if args, err = canon.Marshal(doc); err != nil {
			return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("mcp-guard: prompt %q: arguments: %v", ps.Name, err)}
		}
	}
	e, ok := p.currentItem(pin.Prompts, ps.Name)
	if !ok {
		p.recordUnknownItem(ctx, pin.Prompts, ps.Name, args)
		return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("prompt %q not found: mcp-guard shows no prompt of that name", ps.Name)}
	}
	res := p.runItem(ctx, p.promptRequest(ctx, e, e.Item.Digest(), args))
	if res.Status != gate.Done {
		return nil, itemFailure(e.Host, res)
	}
	if err := readablePrompt(res.Res); err != nil {
		p.log.Warn("upstream prompt refused", "id", res.CallID, "prompt", e.Host, "err", err)
		return nil, fmt.Errorf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", e.Host, err, res.CallID)
	}
	return p.fromServer(e.Server, res.Res), nil
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
		ItemKind:  pin.Prompts,
		Listed:    e.Host,
		Args:      args,
		Pending:   &host.pending,
	}
}

// refusePromptArgs refuses, and records, a prompts/get of name whose
// arguments gate does not read as one strict JSON object of strings (J1:
// duplicate names, invalid UTF-8, another type). A get of a prompt the
// host is shown goes through the pipeline with the host's own bytes, which
// gate refuses and records out of band; any other is refused before it.
func (p *Proxy) refusePromptArgs(ctx context.Context, name string, raw json.RawMessage, unread error) error {
	e, ok := p.currentItem(pin.Prompts, name)
	if !ok {
		ref := p.itemRefusal(ctx, pin.Prompts, name, raw)
		ref.Unread = fmt.Errorf("arguments %w", unread)
		id, _, err := p.pipe.Refuse(ctx, ref)
		if err != nil {
			p.log.Error("refused prompt get not recorded", "prompt", name, "err", err)
			return &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("mcp-guard: prompt %q refused: arguments %v; it could not be recorded in the ledger: the operator's log says why", name, unread)}
		}
		p.log.Warn("prompt refused: arguments", "id", id, "prompt", name, "reason", unread)
		return &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("mcp-guard: prompt %q refused: arguments %v (ledger call %d)", name, unread, id)}
	}
	res := p.pipe.Run(ctx, p.promptRequest(ctx, e, e.Item.Digest(), raw), gate.ForwardFunc(func(context.Context, int64, func(json.RawMessage, error)) (json.RawMessage, error) {
		// gate reads these arguments as ReadPromptArgs did: never reached
		return nil, errors.New("mcp-guard: arguments that are not strict strings are never forwarded")
	}))
	if res.Status == gate.Done {
		return &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("mcp-guard: %s refused: arguments %v", e.Host, unread)}
	}
	return itemFailure(e.Host, res)
}

// readablePrompt reports why raw, an upstream's prompts/get result, is not
// one a host can read: it needs a "messages" array, each message with
// content.
func readablePrompt(raw json.RawMessage) error {
	var r struct {
		Description *string `json:"description"`
		Messages    *[]struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if r.Messages == nil {
		return errors.New(`no "messages" array`)
	}
	for i, m := range *r.Messages {
		if len(m.Content) == 0 || string(m.Content) == "null" {
			return fmt.Errorf("messages[%d] has no content", i)
		}
	}
	return nil
}
