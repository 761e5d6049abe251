package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/pin"
)

// complete answers completion/complete for an exposed prompt or resource
// template by asking the server that owns it, under its own name or URI.
// A prompt or template the host is not shown gets no completions.
func (p *Proxy) complete(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	var ps struct {
		Ref      json.RawMessage      `json:"ref"`
		Argument mcp.CompleteArgument `json:"argument"`
		Context  mcp.CompleteContext  `json:"context"`
	}
	if err := readParams(r, &ps); err != nil {
		return nil, err
	}
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if err := json.Unmarshal(ps.Ref, &ref); err != nil {
		return nil, &rpcError{mcp.INVALID_PARAMS, "invalid completion/complete params: \"ref\" must be an object with a type"}
	}
	name := ref.Name
	switch ref.Type {
	case "ref/prompt":
	case "ref/resource":
		name = ref.URI
	default:
		return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("invalid completion/complete params: unknown reference type %q", ref.Type)}
	}
	argRaw, err := json.Marshal(ps.Argument)
	if err != nil {
		return nil, err
	}
	var ctxRaw json.RawMessage
	if len(ps.Context.Arguments) > 0 {
		if ctxRaw, err = json.Marshal(ps.Context); err != nil {
			return nil, err
		}
	}
	return p.completeRaw(ctx, ref.Type, name, argRaw, ctxRaw)
}

// completeRaw forwards one completion/complete about an exposed prompt
// (refType ref/prompt) or resource template (ref/resource), named as the
// host sees it, with the host's argument and context bytes, and returns
// the server's result: its own bytes, except that the values are escaped
// (they are text a person picks from) and at most 100 (hasMore then true).
func (p *Proxy) completeRaw(ctx context.Context, refType, ref string, arg, cctx json.RawMessage) (json.RawMessage, error) {
	var server, upRef string
	switch refType {
	case "ref/prompt":
		e, ok := p.currentItem(pin.Prompts, ref)
		if !ok {
			return nil, fmt.Errorf("mcp-guard: no prompt %q is exposed", ref)
		}
		server, upRef = e.Server, `{"type":"ref/prompt","name":`+string(jsonString(e.Item.Key))+`}`
	case "ref/resource":
		e, ok := p.currentItem(pin.Templates, ref)
		if !ok {
			return nil, fmt.Errorf("mcp-guard: no resource template %q is exposed", ref)
		}
		server, upRef = e.Server, `{"type":"ref/resource","uri":`+string(jsonString(e.Item.Key))+`}`
	default:
		return nil, fmt.Errorf("unknown reference type: %q", refType)
	}
	u := p.upstream(server)
	if u == nil {
		return nil, fmt.Errorf("mcp-guard: upstream %q is not connected", server)
	}
	var params bytes.Buffer
	params.WriteString(`{"ref":` + upRef + `,"argument":`)
	params.Write(arg)
	if len(cctx) > 0 {
		params.WriteString(`,"context":`)
		params.Write(cctx)
	}
	params.WriteByte('}')
	one, _, err := oneLine(params.Bytes())
	if err != nil {
		return nil, fmt.Errorf("mcp-guard: completion/complete: %w", err)
	}
	if err := p.pipe.SecretRefusal("completion/complete", one); err != nil {
		return nil, err
	}
	cctx2, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := u.Call(cctx2, "completion/complete", one)
	if err != nil {
		p.log.Warn("completion/complete failed", "server", server, "err", err)
		return nil, hostFailure(server+": completion/complete", 0, err)
	}
	out, err := hostCompletion(res)
	if err != nil {
		return nil, fmt.Errorf("mcp-guard: %s: completion/complete: bad result: %w", server, err)
	}
	return p.fromServer(server, out), nil
}

// hostCompletion is a server's completion/complete result as the host gets
// it: its own bytes, with only the values escaped and cut to 100 (and then
// hasMore true) when that changes them.
func hostCompletion(res json.RawMessage) (json.RawMessage, error) {
	comp, ok := member(res, "completion")
	if !ok {
		return nil, errors.New(`no "completion" object`)
	}
	var c struct {
		Values []string `json:"values"`
	}
	if err := json.Unmarshal(comp, &c); err != nil {
		return nil, err
	}
	if c.Values == nil {
		return nil, errors.New(`no "values" array`)
	}
	changed, cut := false, len(c.Values) > 100
	if cut {
		c.Values, changed = c.Values[:100], true
	}
	for i, v := range c.Values {
		if s := safetext.Show(v, 1024); s != v {
			c.Values[i], changed = s, true
		}
	}
	if !changed {
		return res, nil
	}
	var vals bytes.Buffer
	enc := json.NewEncoder(&vals)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c.Values); err != nil {
		return nil, err
	}
	comp, _ = replaceMember(comp, "values", bytes.TrimSuffix(vals.Bytes(), []byte("\n")))
	if cut {
		comp, _ = setMember(comp, "hasMore", []byte("true"))
	}
	out, _ := replaceMember(res, "completion", comp)
	return out, nil
}
