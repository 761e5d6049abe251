package proxy

import (
	"fmt"
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"

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
	host   mcp.Tool    // what mcp-go lists to the host
}

// nameCand is a listed tool or item that nothing else withholds, under the
// name or host URI it would be shown as; at is its index in the caller's
// list.
type nameCand struct {
	at   int
	name string
}

// exposeAll refuses names that are invalid (pattern: tools and prompts,
// whose names must match exposedNameRE) and names that collide among the
// candidates of one kind (noun: tool, prompt, resource, template); a
// collision refuses every candidate that shares the name, so nothing is
// renamed or picked silently. It returns why, by the caller's index.
func exposeAll(noun string, cands []nameCand, pattern bool) map[int]string {
	refused := map[int]string{}
	byName := map[string][]int{}
	for _, c := range cands {
		if pattern && !exposedNameRE.MatchString(c.name) {
			refused[c.at] = fmt.Sprintf("exposed name %q does not match ^[a-zA-Z0-9_-]{1,64}$", c.name)
			continue
		}
		byName[c.name] = append(byName[c.name], c.at)
	}
	for name, ats := range byName {
		if len(ats) > 1 {
			for _, at := range ats {
				refused[at] = fmt.Sprintf("exposed name %q collides with another %s (%d %ss share it)", name, noun, len(ats), noun)
			}
		}
	}
	return refused
}
