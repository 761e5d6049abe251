package gate

import (
	"fmt"
	"net/url"

	"github.com/mcp-guard/mcp-guard/classify"
)

// PromptName is how limits count and messages name a prompt: "every/prompt:simple".
func PromptName(server, prompt string) string { return server + "/prompt:" + prompt }

// ResourceName is how limits count and messages name a resource URI:
// "fs/resource:file:///work/a".
func ResourceName(server, uri string) string { return server + "/resource:" + uri }

// ReadPromptArgs reads a prompts/get's arguments strictly (J1): one JSON
// object of strings, no name twice (nor two that fold to one), valid
// UTF-8, not nested past what the ledger records. DecidePrompt decides on
// this reading; proxy asks it whether mcp-go's decoding of the arguments
// (a string map) would hold them as they are.
func ReadPromptArgs(args []byte) (map[string]any, error) {
	doc, err := readArgs(args)
	if err != nil {
		return nil, err
	}
	for k, v := range doc {
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("are not all strings (%q is not)", k)
		}
	}
	return doc, nil
}

// ExposablePrompt reports whether any prompt rule could match gets of
// server/prompt; a prompt for which it is false is never shown to the host.
func (g *Gate) ExposablePrompt(server, prompt string) (classify.Match, bool) {
	return g.rules.ExposablePrompt(server, prompt)
}

// ExposableResource reports whether a resource rule matches the URI of a
// listed resource; one for which it is false is never shown to the host.
func (g *Gate) ExposableResource(server, uri string) (classify.Match, bool) {
	return g.rules.DecideResource(server, uri)
}

// ExposableTemplate reports whether a resource rule matches the text of a
// listed resource template; one for which it is false is never shown.
func (g *Gate) ExposableTemplate(server, uriTemplate string) (classify.Match, bool) {
	return g.rules.ExposableTemplate(server, uriTemplate)
}

// DecidePrompt decides one prompts/get by the prompt rules. args are the
// arguments' JSON bytes (nil or empty: none, read as {}); they must be one
// object whose values are all strings, read strictly (J1).
func (g *Gate) DecidePrompt(server, prompt string, args []byte) Decision {
	name := PromptName(server, prompt)
	doc, err := ReadPromptArgs(args)
	if err == nil {
		err = g.rules.CaseMismatchPrompt(server, prompt, doc)
	}
	if err != nil {
		return Decision{
			Outcome: Invalid,
			Stage:   StageReading,
			Reason:  "arguments " + err.Error(),
			Message: fmt.Sprintf("mcp-guard: %s refused: arguments %v", name, err),
		}
	}
	m, ok := g.rules.DecidePrompt(server, prompt, doc)
	return contentDecision(name, m, ok, "no rule allows these arguments")
}

// DecideResource decides one resources/read (or subscribe) of uri, the
// upstream's own URI, by the resource rules.
func (g *Gate) DecideResource(server, uri string) Decision {
	m, ok := g.rules.DecideResource(server, uri)
	if p, isFile := classify.FilePath(uri); isFile && g.local(server) {
		// Decide again on the file the server will open, links followed.
		real, err := g.resolve(p)
		if err != nil {
			return Decision{
				Outcome: Refuse,
				Stage:   StageRules,
				Reason:  "path not resolved: " + err.Error(),
				Message: fmt.Sprintf("mcp-guard: %s refused: its path could not be resolved (%v)", ResourceName(server, uri), err),
			}
		}
		m2, ok2 := g.rules.DecideResource(server, (&url.URL{Scheme: "file", Path: real}).String())
		labels := unionLabels(m.Labels, m2.Labels)
		m, ok = classify.Stricter(m, ok, m2, ok2)
		m.Labels = labels
	}
	return contentDecision(ResourceName(server, uri), m, ok, "no rule allows this URI")
}

func contentDecision(name string, m classify.Match, ok bool, noRule string) Decision {
	if !ok {
		return Decision{
			Outcome: Deny,
			Stage:   StageRules,
			Class:   classify.Read,
			Reason:  noRule,
			Message: fmt.Sprintf("mcp-guard: %s denied: %s", name, noRule),
		}
	}
	d := Decision{Stage: StageRules, Rule: m.Rule, Class: m.Class, Reason: m.Reason, Labels: m.Labels}
	switch m.Action {
	case classify.Allow:
		d.Outcome = Allow
	case classify.Deny:
		d.Outcome = Deny
		d.Message = fmt.Sprintf("mcp-guard: %s denied by rule %d", name, m.Rule)
		if m.Reason != "" {
			d.Message += ": " + m.Reason
		}
	default: // prompt and resource rules cannot ask
		d.Outcome = Refuse
		d.Message = fmt.Sprintf("mcp-guard: %s refused: rule %d has an action a prompt or resource rule cannot have", name, m.Rule)
	}
	return d
}

// DecidePrompt is Gate.DecidePrompt under this session's limits.
func (s *Session) DecidePrompt(server, prompt string, args []byte) Decision {
	return s.decide(PromptName(server, prompt), args, func() Decision { return s.g.DecidePrompt(server, prompt, args) })
}

// DecideResource is Gate.DecideResource under this session's limits; the
// URI is what identical repeats compare.
func (s *Session) DecideResource(server, uri string) Decision {
	return s.decide(ResourceName(server, uri), nil, func() Decision { return s.g.DecideResource(server, uri) })
}
