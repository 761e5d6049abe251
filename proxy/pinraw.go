package proxy

// pinRaw is what the ledger keeps of a listed definition's bytes: raw with
// every known secret and found credential redacted (T1: nothing mcp-guard
// stores holds a credential's value). The pin's digest stays that of what
// the server sent, so a change is still a change.
func (p *Proxy) pinRaw(raw []byte) []byte {
	if p.opts.Secrets == nil || len(raw) == 0 {
		return raw
	}
	out, _ := p.opts.Secrets.RedactJSON(raw)
	return out
}
