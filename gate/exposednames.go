package gate

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-guard/mcp-guard/pin"
)

// What the host calls a server's tool, prompt or resource: the names the
// view shows (ExposedName, HostURI) and the rules they must keep
// (exposeAll).

// exposedNameRE is what an exposed tool or prompt name must match (P5).
var exposedNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ExposedName is the name the host sees for an upstream tool or prompt.
func ExposedName(server, tool string) string {
	return server + "__" + tool
}

// HostURIPrefix starts every resource URI and template the host sees.
const HostURIPrefix = "mcp-guard://"

// HostURI is the URI the host sees for an upstream's resource URI (or
// template): "mcp-guard://<server>/" followed by the upstream's URI
// verbatim, e.g. mcp-guard://fs/file:///home/me/notes.txt. A server name
// holds no '/', so the host URI maps back to exactly one server and one
// upstream URI, and two servers' URIs can never collide. A template keeps
// its expressions, so the host expands it as the upstream's own.
func HostURI(server, uri string) string { return HostURIPrefix + server + "/" + uri }

// SplitHostURI is the server and upstream URI a host URI names, if it has
// the shape HostURI gives; whether that server is configured is the
// caller's to check.
func SplitHostURI(host string) (server, uri string, ok bool) {
	rest, ok := strings.CutPrefix(host, HostURIPrefix)
	if !ok {
		return "", "", false
	}
	server, uri, ok = strings.Cut(rest, "/")
	if !ok || uri == "" {
		return "", "", false
	}
	return server, uri, true
}

// hostName is what the host sees an item as: a prompt under its own name
// when bare (namespace = false); a resource or template always under its
// host URI, which says which server it is of.
func hostName(server string, it pin.Item, bare bool) string {
	if it.Kind == pin.Prompts {
		if bare {
			return it.Key
		}
		return ExposedName(server, it.Key)
	}
	return HostURI(server, it.Key)
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
