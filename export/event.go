package export

import (
	"crypto/sha256"
	"strconv"
	"time"
)

// What an Event reports.
const (
	EventDecision = "decision" // a request decided and recorded
	EventOutcome  = "outcome"  // how a started call ended
	EventHead     = "head"     // a chain head committed to the witnesses
)

// Event is one thing exported: a decision, an outcome or a chain head, as
// the ledger recorded it (pure data). Args is set only with
// include_arguments.
type Event struct {
	What string
	Time time.Time

	// Decisions and outcomes.
	CallID    int64
	Kind      string // the ledger's kind: tool, prompt, resource, sampling, elicitation, roots
	Server    string
	Name      string // the tool, prompt or resource URI; a client request's method
	Exposed   string
	SessionID string
	RequestID string
	Decision  string
	Rule      int
	Class     string
	Reason    string
	Labels    []string
	Approval  int64
	Args      []byte // argument bytes, only when include_arguments

	State       string // outcome: done, failed, cancelled
	IsError     bool
	Err         string
	Duration    time.Duration
	ResultBytes int64
	Result      string // the result's digest

	// Filled in by the exporter from the ledger, off the host's path.
	Seq  int64
	Hash string

	// Chain heads.
	Ledger string // the ledger's identity (the hash of event 1)
	Path   string
	Why    string
}

// method is the MCP method a ledger kind stands for.
func method(kind string) string {
	switch kind {
	case "", "tool":
		return "tools/call"
	case "prompt":
		return "prompts/get"
	case "resource":
		return "resources/read"
	case "sampling":
		return "sampling/createMessage"
	case "elicitation":
		return "elicitation/create"
	case "roots":
		return "roots/list"
	}
	return kind
}

// Attribute names. mcp.* and gen_ai.* are the OpenTelemetry semantic
// conventions for MCP and GenAI (semantic-conventions-genai, development
// status); mcp_guard.* is what they do not define.
const (
	attrMethod    = "mcp.method.name"
	attrSession   = "mcp.session.id"
	attrResource  = "mcp.resource.uri"
	attrRequestID = "jsonrpc.request.id"
	attrOperation = "gen_ai.operation.name"
	attrTool      = "gen_ai.tool.name"
	attrPrompt    = "gen_ai.prompt.name"
	attrArgs      = "gen_ai.tool.call.arguments"
	attrErrorType = "error.type"
)

// attrs are e's attributes (without the ledger's event, added by the
// caller).
func (e Event) attrs() []attr {
	if e.What == EventHead {
		return []attr{
			str("mcp_guard.ledger.id", e.Ledger),
			num("mcp_guard.ledger.seq", e.Seq),
			str("mcp_guard.ledger.hash", e.Hash),
			str("mcp_guard.ledger.path", e.Path),
			str("mcp_guard.head.why", e.Why),
		}
	}
	m := method(e.Kind)
	a := []attr{str(attrMethod, m), str("mcp_guard.server", e.Server), num("mcp_guard.call.id", e.CallID)}
	switch e.Kind {
	case "", "tool":
		a = append(a, str(attrOperation, "execute_tool"), str(attrTool, e.Name))
	case "prompt":
		a = append(a, str(attrPrompt, e.Name))
	case "resource":
		a = append(a, str(attrResource, e.Name))
	}
	if e.Exposed != "" {
		a = append(a, str("mcp_guard.exposed_name", e.Exposed))
	}
	if e.SessionID != "" {
		a = append(a, str(attrSession, e.SessionID))
	}
	if e.RequestID != "" {
		a = append(a, str(attrRequestID, e.RequestID))
	}
	if e.Decision != "" {
		a = append(a, str("mcp_guard.decision", e.Decision))
	}
	if e.Rule > 0 {
		a = append(a, num("mcp_guard.rule", int64(e.Rule)))
	}
	if e.Class != "" {
		a = append(a, str("mcp_guard.class", e.Class))
	}
	if e.Reason != "" {
		a = append(a, str("mcp_guard.reason", e.Reason))
	}
	if len(e.Labels) > 0 {
		a = append(a, list("mcp_guard.labels", e.Labels))
	}
	if e.Approval > 0 {
		a = append(a, num("mcp_guard.approval.id", e.Approval))
	}
	if e.Args != nil {
		a = append(a, str(attrArgs, string(e.Args)))
	}
	if e.What == EventOutcome {
		a = append(a, str("mcp_guard.outcome", e.State), flag("mcp_guard.result.is_error", e.IsError),
			num("mcp_guard.result.bytes", e.ResultBytes))
		if e.Result != "" {
			a = append(a, str("mcp_guard.result.digest", e.Result))
		}
		if e.Err != "" {
			a = append(a, str("mcp_guard.error", e.Err))
		}
		if t := e.errorType(); t != "" {
			a = append(a, str(attrErrorType, t))
		}
	}
	if e.Hash != "" {
		a = append(a, num("mcp_guard.ledger.seq", e.Seq), str("mcp_guard.ledger.hash", e.Hash))
	}
	return a
}

// errorType is error.type for an outcome that is not a success.
func (e Event) errorType() string {
	switch {
	case e.State != "" && e.State != "done":
		return e.State
	case e.IsError:
		return "tool_error"
	}
	return ""
}

// refused reports whether a decision kept the request from the upstream.
func (e Event) refused() bool {
	return e.Decision != "allow" && e.Decision != "ask" && e.Decision != "approved"
}

// traceID is the trace every record of call id in ledger belongs to; the
// decision's span is its root, the outcome's span its child.
func traceID(ledger string, id int64) []byte {
	h := sha256.Sum256([]byte("mcp-guard trace\x00" + ledger + "\x00" + strconv.FormatInt(id, 10)))
	return h[:16]
}

func spanID(trace []byte, what string) []byte {
	h := sha256.Sum256(append(append([]byte{}, trace...), what...))
	return h[:8]
}

// records turns e into a log record and a span.
func (e Event) records(ledger string) (logRecord, span) {
	at := uint64(e.Time.UnixNano())
	a := e.attrs()
	if e.What == EventHead {
		msg := "ledger head seq=" + strconv.FormatInt(e.Seq, 10) + " hash=" + e.Hash + " why=" + e.Why + " ledger=" + e.Ledger
		return logRecord{time: at, severity: sevInfo, sevText: "INFO", event: "mcp_guard.ledger.head", body: msg, attrs: a}, span{}
	}
	trace := traceID(ledger, e.CallID)
	decide := spanID(trace, EventDecision)
	target := e.Name
	if e.Kind == "resource" {
		target = "" // URIs are high-cardinality: the convention keeps them out of span names
	}
	name := method(e.Kind)
	if target != "" {
		name += " " + target
	}
	switch e.What {
	case EventDecision:
		sev, text := sevInfo, "INFO"
		s := span{traceID: trace, spanID: decide, name: "mcp_guard.decide " + name, kind: spanInternal, start: at, end: at, attrs: a}
		if e.Decision == "approved" { // the operator's answer to an ask: a child of the ask
			s.spanID, s.parent, s.name = spanID(trace, "approved"), decide, "mcp_guard.approved "+name
		}
		if e.refused() {
			sev, text = sevWarn, "WARN"
			s.status, s.statusMsg = statusError, e.Decision
			s.attrs = append(s.attrs, str(attrErrorType, e.Decision))
		}
		return logRecord{time: at, severity: sev, sevText: text, event: "mcp_guard.decision", body: e.Decision + " " + name, attrs: a, traceID: trace, spanID: s.spanID}, s
	default:
		call := spanID(trace, EventOutcome)
		start := at - uint64(max(e.Duration, 0))
		sev, text := sevInfo, "INFO"
		s := span{traceID: trace, spanID: call, parent: decide, name: name, kind: spanClient, start: start, end: at, attrs: a, status: statusOK}
		if t := e.errorType(); t != "" {
			sev, text = sevError, "ERROR"
			s.status, s.statusMsg = statusError, t
		}
		return logRecord{time: at, severity: sev, sevText: text, event: "mcp_guard.outcome", body: e.State + " " + name, attrs: a, traceID: trace, spanID: call}, s
	}
}
