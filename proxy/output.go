package proxy

import (
	"encoding/json"
	"errors"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/pin"
)

// outputViolation says why a tool result breaks the tool's pinned
// outputSchema, or returns "" when it does not. Only a result that is not
// an error is checked (the protocol does not hold errors to the schema).
// With an outputSchema the protocol requires structuredContent that
// conforms to it, so a result without one is a violation too; so is
// structuredContent that is not strict JSON (duplicate keys, invalid UTF-8),
// which two readers could take for different values.
func outputViolation(schema *pin.Schema, res json.RawMessage) string {
	if schema == nil {
		return ""
	}
	var r struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "the result is not a JSON object: " + safetext.Show(err.Error(), 200)
	}
	if r.IsError {
		return ""
	}
	if len(r.StructuredContent) == 0 || string(r.StructuredContent) == "null" {
		return "no structuredContent (an outputSchema requires it)"
	}
	doc, err := canon.Decode(r.StructuredContent)
	if err != nil {
		return "structuredContent is not strict JSON: " + safetext.Show(err.Error(), 200)
	}
	if err := schema.Validate(doc); err != nil {
		var ve *pin.ValidationError
		if errors.As(err, &ve) {
			return "structuredContent " + ve.Detail()
		}
		return "structuredContent: " + safetext.Show(err.Error(), 300)
	}
	return ""
}
