package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Tool is one tool as its upstream sent it. Raw holds the exact bytes of the
// tool object from the tools/list result; every other field is read from Raw
// and is only a view of it.
type Tool struct {
	Raw          json.RawMessage // the tool object, byte for byte as received
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage // raw bytes of "inputSchema"
	OutputSchema json.RawMessage // raw bytes of "outputSchema", if any
	Annotations  json.RawMessage // raw bytes of "annotations", if any
	Meta         json.RawMessage // raw bytes of "_meta", if any
	TaskSupport  string          // "execution.taskSupport": "", "forbidden", "optional" or "required"
}

// Digest is the SHA-256 of the tool's raw bytes, in hex.
func (t Tool) Digest() string {
	sum := sha256.Sum256(t.Raw)
	return hex.EncodeToString(sum[:])
}

// Page is one tools/list result split into its tools.
type Page struct {
	Tools      []Tool
	NextCursor string
}

// SplitPage splits the raw result of one tools/list call. It refuses a result
// that is not an object with a "tools" array, and any tool that is not an
// object with a string name and an object inputSchema.
func SplitPage(result []byte) (Page, error) {
	var pg struct {
		Tools      *[]json.RawMessage `json:"tools"`
		NextCursor *string            `json:"nextCursor"`
	}
	if err := json.Unmarshal(result, &pg); err != nil {
		return Page{}, fmt.Errorf("tools/list result: %w", err)
	}
	if pg.Tools == nil {
		return Page{}, errors.New(`tools/list result: no "tools" array`)
	}
	var p Page
	if pg.NextCursor != nil {
		p.NextCursor = *pg.NextCursor
	}
	for i, raw := range *pg.Tools {
		t, err := ParseTool(raw)
		if err != nil {
			return Page{}, fmt.Errorf("tools/list result: tools[%d]: %w", i, err)
		}
		p.Tools = append(p.Tools, t)
	}
	return p, nil
}

// ParseTool reads the fields of one raw tool object. The returned Tool keeps
// raw itself (copied) as Raw.
func ParseTool(raw json.RawMessage) (Tool, error) {
	var f struct {
		Name         *string         `json:"name"`
		Title        *string         `json:"title"`
		Description  *string         `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
		Meta         json.RawMessage `json:"_meta"`
		Execution    *struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return Tool{}, fmt.Errorf("not a tool object: %w", err)
	}
	if f.Name == nil {
		return Tool{}, errors.New(`no "name"`)
	}
	t := Tool{Raw: bytes.Clone(raw), Name: *f.Name}
	if f.Execution != nil {
		t.TaskSupport = f.Execution.TaskSupport
	}
	if f.Title != nil {
		t.Title = *f.Title
	}
	if f.Description != nil {
		t.Description = *f.Description
	}
	if !isObject(f.InputSchema) {
		return Tool{}, fmt.Errorf("tool %q: inputSchema is missing or not an object", t.Name)
	}
	t.InputSchema = f.InputSchema
	if len(f.OutputSchema) > 0 && !isNull(f.OutputSchema) {
		if !isObject(f.OutputSchema) {
			return Tool{}, fmt.Errorf("tool %q: outputSchema is not an object", t.Name)
		}
		t.OutputSchema = f.OutputSchema
	}
	if len(f.Annotations) > 0 && !isNull(f.Annotations) {
		if !isObject(f.Annotations) {
			return Tool{}, fmt.Errorf("tool %q: annotations is not an object", t.Name)
		}
		t.Annotations = f.Annotations
	}
	if len(f.Meta) > 0 && !isNull(f.Meta) {
		if !isObject(f.Meta) {
			return Tool{}, fmt.Errorf("tool %q: _meta is not an object", t.Name)
		}
		t.Meta = f.Meta
	}
	return t, nil
}

func isObject(raw json.RawMessage) bool {
	b := bytes.TrimLeft(raw, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}
