package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Approvals in the host's own UI ([approvals] in_host, a rule's ask_in).
// A tool call held for the operator is also put to the host as an
// elicitation form: mcp-guard's presentation of the exact call (the one
// the approval stores, escaped and bounded) and a single approve/deny
// choice. The host's answer to that one request decides the approval as a
// terminal decision does, bound to the digest of the presentation it
// showed, through the same ledger transition (first decision wins, the
// call runs once); its event records that the host decided. A presentation
// cut for length cannot be approved in the host: the form offers deny
// alone and says to approve in a terminal. The terminal keeps working
// throughout; when the wait ends, the host is no longer asked.

// The host's choices, as the form's one field takes them.
const (
	hostApprove = "approve"
	hostDeny    = "deny"
	hostField   = "decision"
)

// hostForm is the elicitation/create params that put approval apID, whose
// stored presentation is text, to the host; full reports whether text
// shows every byte of the call (only then can the host approve it).
func hostForm(apID int64, text string, full bool) (json.RawMessage, error) {
	var msg strings.Builder
	fmt.Fprintf(&msg, "mcp-guard holds this call until you decide (approval %d):\n\n%s\n", apID, text)
	choices, names := []string{hostApprove, hostDeny}, []string{"Approve: run it once, exactly as shown", "Deny"}
	if full {
		fmt.Fprintf(&msg, "Approve runs it once, with exactly these arguments. You can also decide in a terminal: mcp-guard approve %d.", apID)
	} else {
		fmt.Fprintf(&msg, "The call is too long to show here whole, so it cannot be approved here: read it all and approve it in a terminal (mcp-guard approvals show %d --full). Here you can deny it.", apID)
		choices, names = []string{hostDeny}, []string{"Deny"}
	}
	return json.Marshal(map[string]any{
		"message": msg.String(),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				hostField: map[string]any{"type": "string", "title": "Your decision", "enum": choices, "enumNames": names},
			},
			"required": []string{hostField},
		},
	})
}

// hostAnswer reads the host's answer to a form, strict JSON: accept with
// exactly one field holding one of the offered choices, byte for byte, or
// decline (a denial). ok is false for cancel (no decision: the terminal
// still decides) and for anything else, which is refused.
func hostAnswer(raw json.RawMessage, full bool) (approve, ok bool, err error) {
	if err := canon.Check(raw); err != nil {
		// two readings of one answer (a key twice) are no answer
		return false, false, fmt.Errorf("the host's answer is not strict JSON: %w", err)
	}
	var res struct {
		Action  string                     `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, false, fmt.Errorf("the host's answer is not an elicitation result: %w", err)
	}
	switch res.Action {
	case "decline":
		return false, true, nil
	case "cancel":
		return false, false, nil
	case "accept":
	default:
		return false, false, fmt.Errorf("the host's answer has action %q", res.Action)
	}
	v, found := res.Content[hostField]
	if !found || len(res.Content) != 1 {
		return false, false, fmt.Errorf("the host's answer must hold exactly the field %q", hostField)
	}
	switch {
	case bytes.Equal(v, []byte(`"`+hostDeny+`"`)):
		return false, true, nil
	case bytes.Equal(v, []byte(`"`+hostApprove+`"`)) && full:
		return true, true, nil
	}
	return false, false, fmt.Errorf("the host's answer %s is not one of the choices offered", v)
}

// askHost puts approval apID of r to the host and records its decision,
// if it gives one before ctx ends. It is run beside the hold; what it
// cannot do is logged, and the terminal still decides: fallback is called
// when the host will not decide (the form not sent, unanswered, dismissed,
// refused, or its decision not recorded) while the wait goes on.
func (p *Pipeline) askHost(ctx context.Context, r *Request, apID int64, ap ledger.ApprovalStart, fallback func()) {
	decided := false
	defer func() {
		if !decided && ctx.Err() == nil {
			fallback()
		}
	}()
	a, err := p.Ledger.Approval(context.WithoutCancel(ctx), apID)
	if err != nil {
		p.log().Error("approval not put to the host", "approval", apID, "err", err)
		return
	}
	_, fullDigest := approvals.Full(a)
	isFull := fullDigest == ap.PresentationDigest
	params, err := hostForm(apID, ap.Presentation, isFull)
	if err != nil {
		p.log().Error("approval not put to the host", "approval", apID, "err", err)
		return
	}
	raw, err := r.AskHost(ctx, params)
	if err != nil {
		if ctx.Err() == nil {
			p.log().Warn("the host did not answer the approval form; the terminal decides", "approval", apID, "err", err)
		}
		return
	}
	approve, answered, err := hostAnswer(raw, isFull)
	if err != nil {
		p.log().Warn("the host's answer to the approval form refused; the terminal decides", "approval", apID, "err", err)
		return
	}
	if !answered {
		p.log().Info("the host dismissed the approval form; the terminal decides", "approval", apID)
		return
	}
	reason := "approved in the host" // the approval's row says where, as its event does
	if !approve {
		reason = "denied in the host"
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer cancel()
	// The shown digest is that of the presentation the form carried; a cut
	// one is refused for an approval (A4), so only a full one approves. A
	// denial needs no full read: it names the full digest.
	if err := p.Ledger.DecideApprovalBy(wctx, apID, fullDigest, approve, reason, approvals.Decidable, ledger.DecidedInHost); err != nil {
		p.log().Warn("the host's decision not recorded", "approval", apID, "err", err)
		decided = errors.Is(err, ledger.ErrConflict) // decided already, elsewhere
		return
	}
	decided = true
	p.log().Info("the host decided an approval", "approval", apID, "approve", approve)
}
