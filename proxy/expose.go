package proxy

import (
	"fmt"
	"regexp"

	"github.com/mcp-guard/mcp-guard/pin"
)

// exposedNameRE is what an exposed tool name must match (P5).
var exposedNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ExposedName is the name the host sees for an upstream tool.
func ExposedName(server, tool string) string {
	return server + "__" + tool
}

// exposed is one tool as the host sees it, and where it goes.
type exposed struct {
	Name   string // as the host sees it
	Server string
	Tool   pin.Tool
	Schema *pin.Schema // the pinned inputSchema, compiled
	Output *pin.Schema // the pinned outputSchema, compiled; nil when it has none
}

// refusal is a tool that will not be exposed, and why.
type refusal struct {
	Server, Tool, Reason string
}

// candidate is an upstream tool that a rule could match.
type candidate struct {
	server string
	tool   pin.Tool
	schema *pin.Schema
	output *pin.Schema
}

// exposeAll names each candidate and refuses names that are invalid or that
// collide; a collision refuses every tool that shares the name, so nothing is
// renamed or picked silently.
func exposeAll(cands []candidate) ([]exposed, []refusal) {
	byName := map[string][]candidate{}
	var order []string
	var refused []refusal
	for _, c := range cands {
		name := ExposedName(c.server, c.tool.Name)
		if !exposedNameRE.MatchString(name) {
			refused = append(refused, refusal{c.server, c.tool.Name,
				fmt.Sprintf("exposed name %q does not match ^[a-zA-Z0-9_-]{1,64}$", name)})
			continue
		}
		if _, ok := byName[name]; !ok {
			order = append(order, name)
		}
		byName[name] = append(byName[name], c)
	}
	var out []exposed
	for _, name := range order {
		cs := byName[name]
		if len(cs) > 1 {
			for _, c := range cs {
				refused = append(refused, refusal{c.server, c.tool.Name,
					fmt.Sprintf("exposed name %q collides with another tool (%d tools share it)", name, len(cs))})
			}
			continue
		}
		out = append(out, exposed{Name: name, Server: cs[0].server, Tool: cs[0].tool, Schema: cs[0].schema, Output: cs[0].output})
	}
	return out, refused
}
