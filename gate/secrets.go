package gate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcp-guard/mcp-guard/classify"
)

// StageSecrets is the secrets stage: arguments carrying a credential
// mcp-guard holds are refused (T2).
const StageSecrets Stage = "secrets"

// secretArgs is the secrets stage (T2): a tool's or prompt's arguments
// carrying a known secret, in any encoding, are refused before any other
// stage reads them. The ledger's reason names which secret, how written
// and where; the host is told only that a credential was refused.
func (p *Pipeline) secretArgs(r *Request) (Decision, bool) {
	if p.Secrets == nil || len(r.Args) == 0 {
		return Decision{}, false
	}
	var known []string
	for _, h := range p.Secrets.Contains(r.Args) {
		if h.Known() {
			known = append(known, h.String())
		}
	}
	if len(known) == 0 {
		return Decision{}, false
	}
	return Decision{
		Outcome: Deny,
		Stage:   StageSecrets,
		Reason:  "the arguments carry a credential mcp-guard holds: " + strings.Join(known, "; "),
		Message: fmt.Sprintf("mcp-guard: the %s %s was refused: its arguments carry a credential mcp-guard holds for a server, and credentials are never passed through arguments", kinds[r.Kind].noun, p.displayName(r)),
	}, true
}

// redactedArgs is what the ledger keeps of arguments: r.Args with every
// known secret and found credential replaced (nothing mcp-guard stores
// holds a credential's value), and whether they are still recordable as
// arguments (otherwise they go out of band).
func (p *Pipeline) redactedArgs(b []byte) []byte {
	if p.Secrets == nil || len(b) == 0 {
		return b
	}
	out, _ := p.Secrets.RedactJSON(b)
	return out
}

// redactedText is s (an error's text, for the ledger and the log) with
// every known secret and found credential replaced.
func (p *Pipeline) redactedText(s string) string {
	if p.Secrets == nil || s == "" {
		return s
	}
	out, hits := p.Secrets.RedactText([]byte(s))
	if len(hits) == 0 {
		return s
	}
	return string(out)
}

// foundLabels adds the reserved label secret to what a result gives the
// host's scope when it carries a well-known credential format (a private
// key block, a cloud access key, a forge token...), so the always-on flow
// secret -> network, exec: deny holds for the session.
func (p *Pipeline) foundLabels(d Decision, answer []byte) Decision {
	if p.Secrets == nil || len(answer) == 0 {
		return d
	}
	for _, h := range p.Secrets.Contains(answer) {
		if !h.Known() {
			p.log().Warn("credential found in an answer; the session is labelled secret", "what", h.String())
			d.Labels = unionLabels(d.Labels, []string{classify.Secret})
			return d
		}
	}
	return d
}

// errorText is the text of a server's error as the host reads it.
func errorText(err error) []byte {
	b, _ := json.Marshal(err.Error())
	return b
}

// SecretRefusal is the secrets stage for what a host sends that no other
// stage decides (a completion/complete's argument and context): an error
// saying a credential was refused, not which, when b carries a credential
// mcp-guard holds; nil otherwise. The server is not sent b.
func (p *Pipeline) SecretRefusal(what string, b []byte) error {
	if p.Secrets == nil || len(b) == 0 {
		return nil
	}
	for _, h := range p.Secrets.Contains(b) {
		if h.Known() {
			p.log().Warn("request refused: it carries a credential mcp-guard holds", "request", what, "what", h.String())
			return fmt.Errorf("mcp-guard: the %s was refused: it carries a credential mcp-guard holds for a server, and credentials are never passed through arguments", what)
		}
	}
	return nil
}
