package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/pin"
)

// renderInitCases writes the starter test file for mcp-guard test: for
// each tool init listed, one case that calls it with arguments made from
// its inputSchema and expects what its starter rule says (ask). A case
// whose arguments do not pass the schema yet says so.
func renderInitCases(cfgPath string, servers []*initServer) (string, int) {
	var b strings.Builder
	fmt.Fprintf(&b, `# Decision tests for the rules in %s, written by "mcp-guard init".
# "mcp-guard test" decides each case as serve would (nothing is called) and
# fails when the decision is not "expect": allow, ask, deny, invalid or
# hidden (the host is not shown the tool). "rule = N" also checks which rule
# decides; "labels" gives the session's labels. It decides by the pins
# serve recorded: start the host once (or give --schemas FILE).
# When you change a rule, change its case; add a case for each call that
# must be allowed, and for each that must not.
`, safeComment(cfgPath, 300))
	n := 0
	for _, s := range servers {
		for _, t := range s.tools {
			args, ok := exampleArgs(t.InputSchema)
			b.WriteString("\n[[case]]\n")
			fmt.Fprintf(&b, "call = %s\n", tomlString(s.cfg.Name+"/"+t.Name))
			if !ok {
				b.WriteString("# these arguments do not pass the tool's inputSchema yet: fill them in\n")
			}
			fmt.Fprintf(&b, "args = %s\nexpect = \"ask\"\n", tomlValue(args))
			n++
		}
	}
	return b.String(), n
}

// writeInitCases writes the starter test file beside the config at dst,
// unless one is there: an operator's tests are never replaced.
func writeInitCases(c cli, dst string, servers []*initServer) {
	path := testFilePath(dst)
	text, n := renderInitCases(dst, servers)
	if n == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if os.IsExist(err) {
		fmt.Fprintf(c.stdout, "kept %s: your tests are never replaced\n", path)
		return
	}
	if err == nil {
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.Remove(path)
		fmt.Fprintf(c.stdout, "could not write the starter tests %s: %v\n", path, err)
		return
	}
	fmt.Fprintf(c.stdout, "wrote %s (0600): %s, one per tool; run them with mcp-guard test\n", path, plural(n, "case"))
}

// exampleArgs makes arguments from an inputSchema: each required property
// its const, first enum value, default or first example, else a value of
// its type (objects filled the same way), and reports whether they pass
// the schema.
func exampleArgs(schema json.RawMessage) (map[string]any, bool) {
	var root map[string]any
	if json.Unmarshal(schema, &root) != nil {
		return map[string]any{}, false
	}
	args, _ := exampleValue(root, 0).(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	s, err := pin.CompileSchema(schema, pin.SchemaLimits{})
	if err != nil {
		return args, false
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return args, false
	}
	doc, err := canon.Decode(raw)
	return args, err == nil && s.Validate(doc) == nil
}

func exampleValue(s map[string]any, depth int) any {
	if v, ok := s["const"]; ok {
		return v
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if v, ok := s["default"]; ok {
		return v
	}
	if e, ok := s["examples"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok {
		for _, t := range ts {
			if t, _ := t.(string); t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		}
	}
	switch typ {
	case "string":
		return "example"
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return math.Ceil(m)
		}
		return 0.0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			p, _ := props[name].(map[string]any)
			if depth < 4 {
				out[name] = exampleValue(p, depth+1)
			} else {
				out[name] = map[string]any{}
			}
		}
		return out
	}
	return "example"
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// tomlValue is v (from JSON) as a TOML inline value, keys sorted. A JSON
// null has no TOML form: it is written as a string the operator must fix.
func tomlValue(v any) string {
	switch t := v.(type) {
	case string:
		return tomlString(t)
	case bool:
		return strconv.FormatBool(t)
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return strconv.FormatInt(int64(t), 10)
		}
		return strconv.FormatFloat(t, 'g', -1, 64)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = tomlValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		if len(t) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			key := k
			if !bareKey.MatchString(k) {
				key = tomlString(k)
			}
			parts[i] = key + " = " + tomlValue(t[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return tomlString("null: write a value")
}
