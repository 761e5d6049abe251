package pin

import (
	"slices"
	"strconv"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// declaredNames maps the case-folded form (canon.FoldKey) of every property
// name a schema declares anywhere (properties, required, dependentRequired)
// to the names declared with it.
func declaredNames(root *jsonschema.Schema) map[string][]string {
	names := map[string][]string{}
	add := func(n string) {
		k := canon.FoldKey(n)
		if !slices.Contains(names[k], n) {
			names[k] = append(names[k], n)
		}
	}
	walkSchemas(root, func(s *jsonschema.Schema) bool {
		for n := range s.Properties {
			add(n)
		}
		for _, n := range s.Required {
			add(n)
		}
		for n, l := range s.DependentRequired {
			add(n)
			for _, m := range l {
				add(m)
			}
		}
		return true
	})
	return names
}

// caseMismatch finds a member name in doc, at any depth, that the schema
// does not declare but that equals a declared name under Unicode simple case
// folding: JSON Schema reads "path" and "PATH" as two properties, a server
// decoding with encoding/json as one, so the schema's constraints on "path"
// would not cover what the server reads.
func caseMismatch(doc any, declared map[string][]string, ptr string) *Failure {
	switch c := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if d, ok := declared[canon.FoldKey(k)]; ok && !slices.Contains(d, k) {
				return &Failure{Pointer: ptr, Reason: "member " + strconv.Quote(k) + " differs only in case from the declared property " +
					strconv.Quote(d[0]) + "; send the name exactly as declared"}
			}
			if f := caseMismatch(c[k], declared, ptr+"/"+escapePtr(k)); f != nil {
				return f
			}
		}
	case []any:
		for i, v := range c {
			if f := caseMismatch(v, declared, ptr+"/"+strconv.Itoa(i)); f != nil {
				return f
			}
		}
	}
	return nil
}
