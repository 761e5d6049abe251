package proxy

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
)

// Presenter shows definitions to hosts as mcp-go does (gate.Presenter):
// gate's view withholds what mcp-go cannot encode or read, so a host is
// never listed a tool or item its handler cannot be registered for.
type Presenter struct{}

var _ gate.Presenter = Presenter{}

// ShowTool reports whether mcp-go can show t under the gate.ExposedTool name.
func (Presenter) ShowTool(exposed string, t pin.Tool) error {
	_, err := hostTool(gate.ExposedTool{Name: exposed, Tool: t})
	return err
}

// ShowItem reports whether mcp-go can show it under host.
func (Presenter) ShowItem(host string, it pin.Item) error {
	_, err := hostItemJSON(gate.ExposedItem{Item: it, Host: host})
	return err
}

// ParseTemplate reports whether s parses as an RFC 6570 template, by
// mcp-go's own parser.
func (Presenter) ParseTemplate(s string) error {
	_, err := uriTemplate(s)
	return err
}

// view is gate's view of what the host sees (gate.ComputeView), with the
// answers to the host's list requests built from it.
type view struct {
	*gate.View
	// lists: what each list request is answered with (hostraw.go).
	lists map[string]json.RawMessage
}

// hostTool builds the tool the host sees from the upstream's raw definition.
// mcp-go re-encodes it (sorted keys, fixed annotation fields); what is pinned
// and checked is always the upstream's raw bytes.
func hostTool(e gate.ExposedTool) (mcp.Tool, error) {
	t := mcp.Tool{
		Name:            e.Name,
		Title:           e.Tool.Title,
		Description:     e.Tool.Description,
		RawInputSchema:  e.Tool.InputSchema,
		RawOutputSchema: e.Tool.OutputSchema,
	}
	if len(e.Tool.Annotations) > 0 {
		if err := json.Unmarshal(e.Tool.Annotations, &t.Annotations); err != nil {
			return mcp.Tool{}, fmt.Errorf("annotations: %w", err)
		}
	}
	if len(e.Tool.Meta) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(e.Tool.Meta, &fields); err != nil {
			return mcp.Tool{}, fmt.Errorf("_meta: %w", err)
		}
		t.Meta = &mcp.Meta{AdditionalFields: rawFields(fields)}
	}
	if err := mcp.ValidateParamHeaderAnnotations(&t); err != nil {
		return mcp.Tool{}, fmt.Errorf("inputSchema: %w", err)
	}
	return t, nil
}

func rawFields(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// hostPrompt builds the prompt the host sees from the upstream's raw
// definition. mcp-go re-encodes it; what is pinned is the raw bytes.
func hostPrompt(e gate.ExposedItem) (mcp.Prompt, error) {
	var pr mcp.Prompt
	if err := json.Unmarshal(e.Item.Raw, &pr); err != nil {
		return mcp.Prompt{}, err
	}
	pr.Name = e.Host
	return pr, nil
}

func hostResource(e gate.ExposedItem) (mcp.Resource, error) {
	var rs mcp.Resource
	if err := json.Unmarshal(e.Item.Raw, &rs); err != nil {
		return mcp.Resource{}, err
	}
	rs.URI = e.Host
	return rs, nil
}

func hostTemplate(e gate.ExposedItem) (mcp.ResourceTemplate, error) {
	var tm mcp.ResourceTemplate
	if err := json.Unmarshal(e.Item.Raw, &tm); err != nil {
		return mcp.ResourceTemplate{}, err
	}
	t, err := uriTemplate(e.Host)
	if err != nil {
		return mcp.ResourceTemplate{}, err
	}
	tm.URITemplate = t
	return tm, nil
}

// hostItemJSON is mcp-go's encoding of the item as the host sees it.
func hostItemJSON(e gate.ExposedItem) ([]byte, error) {
	var v any
	var err error
	switch e.Item.Kind {
	case pin.Prompts:
		v, err = hostPrompt(e)
	case pin.Resources:
		v, err = hostResource(e)
	default:
		v, err = hostTemplate(e)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// uriTemplate parses an RFC 6570 template with mcp-go's own parser.
func uriTemplate(s string) (*mcp.URITemplate, error) {
	var t mcp.URITemplate
	if err := json.Unmarshal(jsonString(s), &t); err != nil {
		return nil, err
	}
	return &t, nil
}
