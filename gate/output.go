package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// OutputViolation says why a tool result breaks the tool's pinned
// outputSchema, or returns "" when it does not. Only a result that is not
// an error is checked (the protocol does not hold errors to the schema).
// With an outputSchema the protocol requires structuredContent that
// conforms to it, so a result without one is a violation too; so is
// structuredContent that is not strict JSON (duplicate keys, invalid UTF-8),
// which two readers could take for different values.
func OutputViolation(schema *pin.Schema, res json.RawMessage) string {
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

// OutcomeOf describes how a forwarded request ended. The result digest is
// the SHA-256 of the raw bytes the upstream (or host) sent.
func OutcomeOf(res json.RawMessage, err error, d time.Duration, state string) ledger.Outcome {
	o := ledger.Outcome{State: state, Duration: d}
	if err != nil {
		o.Err = err.Error()
		if o.State == "" {
			o.State = "failed"
		}
		return o
	}
	sum := sha256.Sum256(res)
	o.ResultDigest = hex.EncodeToString(sum[:])
	o.ResultBytes = int64(len(res))
	o.IsError = resultIsError(res)
	if o.State == "" {
		o.State = "done"
	}
	return o
}

// resultIsError reads a result's isError as encoding/json reads it, as
// OutcomeOf always has: in one pass when canon.Members can tell, otherwise
// by encoding/json itself. A file read whole comes back in a result, and
// this runs on every call.
func resultIsError(res []byte) bool {
	if v, ok := canon.Members(res, "isError"); ok {
		switch string(v[0]) {
		case "true":
			return true
		case "false", "null", "":
			return false
		}
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(res, &r)
	return r.IsError
}

// Recordable reports whether b may be recorded as a request's arguments:
// strict JSON the ledger can hold (ledger.MaxArgsDepth). Anything else is
// recorded verbatim as ArgsInvalid.
func Recordable(b []byte) bool {
	return canon.Check(b) == nil && canon.Depth(b) <= ledger.MaxArgsDepth
}

// FoldCollision reports member names in raw, at any depth, that are equal
// under Unicode simple case folding (J3); raw that is not strict JSON is
// left to the checks that read it.
func FoldCollision(raw json.RawMessage) error {
	v, err := canon.Decode(raw)
	if err != nil {
		return nil
	}
	if e := canon.FoldCollision(v); e != nil {
		return e
	}
	return nil
}
