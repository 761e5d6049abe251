package main

import (
	"encoding/json"
	"time"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// The records --json prints, one JSON object per line through
// internal/jsonl. Their field names are documented in the README and are
// kept stable: add fields, never rename or drop one.

// jsonTime is t in RFC 3339 (UTC, milliseconds), or "" when t is zero.
func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

type callJSON struct {
	Type         string          `json:"type"` // "call"
	ID           int64           `json:"id"`
	Kind         string          `json:"kind"`
	Session      string          `json:"session"`
	RequestID    string          `json:"request_id"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Exposed      string          `json:"exposed"`
	PinDigest    string          `json:"pin_digest"`
	Decision     string          `json:"decision"`
	Rule         int             `json:"rule"`
	Class        string          `json:"class"`
	Reason       string          `json:"reason"`
	State        string          `json:"state"`
	StartedAt    string          `json:"started_at"`
	EndedAt      string          `json:"ended_at"`
	DurationMS   int64           `json:"duration_ms"`
	ArgsDigest   string          `json:"args_digest"`
	Args         json.RawMessage `json:"args"` // null when not recorded or not JSON
	ArgsInvalid  string          `json:"args_invalid"`
	ResultDigest string          `json:"result_digest"`
	ResultBytes  int64           `json:"result_bytes"`
	IsError      bool            `json:"is_error"`
	Error        string          `json:"error"`
	Late         *lateJSON       `json:"late_outcome"` // null unless an outcome came after the call ended
	DecodeError  string          `json:"decode_error"`
}

type lateJSON struct {
	State        string `json:"state"`
	ResultDigest string `json:"result_digest"`
	ResultBytes  int64  `json:"result_bytes"`
	IsError      bool   `json:"is_error"`
	Error        string `json:"error"`
}

func callRecord(r ledger.CallRow) callJSON {
	o := callJSON{Type: "call", ID: r.ID, Kind: r.Kind, Session: r.SessionID, RequestID: r.RequestID, Server: r.Server, Tool: r.Tool,
		Exposed: r.Exposed, PinDigest: r.PinDigest, Decision: r.Decision, Rule: r.Rule, Class: r.Class, Reason: r.Reason,
		State: r.State, StartedAt: jsonTime(r.StartedAt), EndedAt: jsonTime(r.EndedAt), DurationMS: r.Duration.Milliseconds(),
		ArgsDigest: r.ArgsDigest, ArgsInvalid: string(r.ArgsInvalid), ResultDigest: r.ResultDigest, ResultBytes: r.ResultBytes,
		IsError: r.IsError, Error: r.Err, DecodeError: r.DecodeError}
	if len(r.Args) > 0 && json.Valid(r.Args) {
		o.Args = json.RawMessage(r.Args)
	}
	if r.Late != nil {
		o.Late = &lateJSON{r.Late.State, r.Late.ResultDigest, r.Late.ResultBytes, r.Late.IsError, r.Late.Err}
	}
	return o
}

type labelEventJSON struct {
	Type        string   `json:"type"` // "label_event"
	Seq         int64    `json:"seq"`
	At          string   `json:"at"`
	Kind        string   `json:"kind"` // label.gained, label.declassified, labels.ended, scope.joined
	Scope       string   `json:"scope"`
	Label       string   `json:"label"`
	Labels      []string `json:"labels"`
	Call        int64    `json:"call"`
	Reason      string   `json:"reason"`
	Session     string   `json:"session"`
	DecodeError string   `json:"decode_error"`
}

type approvalJSON struct {
	Type               string `json:"type"` // "approval"
	ID                 int64  `json:"id"`
	State              string `json:"state"` // as it can be acted on now: a pending one past its time is expired
	Call               int64  `json:"call"`
	Session            string `json:"session"`
	Server             string `json:"server"`
	Tool               string `json:"tool"`
	Class              string `json:"class"`
	Rule               int    `json:"rule"`
	Labels             string `json:"labels"`
	Reason             string `json:"reason"`
	PresentationDigest string `json:"presentation_digest"`
	CreatedAt          string `json:"created_at"`
	ExpiresAt          string `json:"expires_at"`
	DecidedAt          string `json:"decided_at"`
	Tampered           string `json:"tampered"` // why the row fails its check; "" when intact
}

func approvalRecord(a ledger.Approval, tampered error) approvalJSON {
	o := approvalJSON{Type: "approval", ID: a.ID, State: stateNow(a), Call: a.CallID, Session: a.SessionID, Server: a.Server,
		Tool: a.Tool, Class: a.Class, Rule: a.Rule, Labels: a.Labels, Reason: a.Reason, PresentationDigest: a.PresentationDigest,
		CreatedAt: jsonTime(a.CreatedAt), ExpiresAt: jsonTime(a.ExpiresAt), DecidedAt: jsonTime(a.DecidedAt)}
	if tampered != nil {
		o.Tampered = tampered.Error()
	}
	return o
}

type pinJSON struct {
	Type          string `json:"type"` // "pin"
	Server        string `json:"server"`
	Tool          string `json:"tool"` // "" for the server's instructions
	State         string `json:"state"`
	Digest        string `json:"digest"`
	PendingDigest string `json:"pending_digest"`
	UpdatedAt     string `json:"updated_at"`
	DecodeError   string `json:"decode_error"`
}

func pinRecord(p ledger.Pin) pinJSON {
	return pinJSON{"pin", p.Server, p.Tool, p.State, p.Digest, p.PendingDigest, jsonTime(p.UpdatedAt), p.DecodeError}
}

type toolJSON struct {
	Type    string `json:"type"` // "tool", "prompt", "resource" or "template"
	Server  string `json:"server"`
	Name    string `json:"name"`    // the upstream's tool or prompt name, resource URI or template
	Exposed string `json:"exposed"` // the name the host sees; "" when hidden
	Hidden  string `json:"hidden"`  // why the host does not see it
	Pin     string `json:"pin"`
	Class   string `json:"class"`
	Action  string `json:"action"`
	Rule    int    `json:"rule"`
	Digest  string `json:"digest"`
}

func toolRecord(t gate.ToolReport) toolJSON {
	return toolJSON{"tool", t.Server, t.Tool, t.Exposed, t.Hidden, t.PinState, t.Class, t.Action, t.Rule, t.Digest}
}

func itemRecord(it gate.ItemReport) toolJSON {
	return toolJSON{it.Kind, it.Server, it.Key, it.Exposed, it.Hidden, it.PinState, "", it.Action, it.Rule, it.Digest}
}

type serverProblemJSON struct {
	Type   string `json:"type"` // "server_error"
	Server string `json:"server"`
	Error  string `json:"error"`
}

type scopeJSON struct {
	Type     string        `json:"type"` // "scope"
	Scope    string        `json:"scope"`
	Sessions []sessionJSON `json:"sessions"`
	Labels   []labelJSON   `json:"labels"`
}

type sessionJSON struct {
	ID        string `json:"id"`
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	Alive     bool   `json:"alive"`
	StartedAt string `json:"started_at"`
}

type labelJSON struct {
	Label string `json:"label"`
	Call  int64  `json:"call"`
	Since string `json:"since"`
}

type verifyJSON struct {
	Type         string `json:"type"` // "verify"
	Ledger       string `json:"ledger"`
	OK           bool   `json:"ok"`
	Events       int64  `json:"events"`
	Rows         int64  `json:"rows"`
	BadSeq       int64  `json:"bad_seq"`
	BadRow       string `json:"bad_row"`
	Problem      string `json:"problem"`
	HeadSeq      int64  `json:"head_seq"`
	HeadHash     string `json:"head_hash"`
	Witness      string `json:"witness"` // the --witness sources, comma separated; "" when none
	WitnessHeads int    `json:"witness_heads"`
	CoveredSeq   int64  `json:"covered_seq"`
	NotCovered   string `json:"not_covered"`
}
