package gate

// Waiting is a request that starts waiting for the operator, as
// Pipeline.Waiting hears of it: what it is and where it goes, never its
// arguments.
type Waiting struct {
	Kind   string // the ledger's kind: "tool", "prompt", "resource", "sampling", "elicitation", "roots"
	Server string
	// Name is the tool, prompt or client request's method; empty for a
	// resource read, whose URI is its argument.
	Name     string
	Approval int64
}

// tellWaiting tells p.Waiting, when set, that r waits as approval apID.
func (p *Pipeline) tellWaiting(r *Request, apID int64) {
	if p.Waiting == nil {
		return
	}
	w := Waiting{Kind: r.Kind.LedgerKind(), Server: r.Server, Name: r.Name, Approval: apID}
	if r.Kind == KindResource {
		w.Name = ""
	}
	p.Waiting(w)
}
