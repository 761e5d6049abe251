// Package gate owns the one enforcement pipeline every request runs
// through: tools/call, prompts/get, resources/read and resources/subscribe
// from the host, and sampling/createMessage, elicitation/create and
// roots/list from an upstream. Pipeline.Run takes a request through strict
// reading, exposure still current, the operator's rules and predicates,
// the pinned schema, flows (the labels the host's scope holds, against the
// request's class; flows.go), the session's limits, L7 (interrupted
// calls), the commit to the ledger (which checks L7 and, for an allowed
// call decided on the labels the process knew, that the scope still holds
// exactly those), a grant or the operator's approval hold, the forward (to
// the server, through Upstreams) and the outcome, which adds the deciding
// rule's labels to the scope before the host reads the result; a table
// says which stages apply to each kind. Anything it does not recognise
// fails closed. A request refused before the pipeline decides it (a name
// the host was not shown, a request that could not be read) is a Refusal:
// its ledger row is built here too.
//
// # One allowed tools/call
//
// On the stdio host (the HTTP host differs only in its first and last
// steps: httppost.go, httpfast.go), each arrow a package crossing:
//
//	proxy   stdiohost.go reads the line, parses the call (its fast path,
//	        or methods.go's tools/call handler), finds the tool in what
//	        the host is shown (Shown), call.go builds a Request
//	  → gate      Pipeline.Run: exposure still current (Shown), strict
//	              reading, rules, schema, flows, limits (Session)
//	  → ledger    the commit (RecordCall), L7 and labels checked in it
//	  → gate      the forward (send): the server as connected now
//	              (Upstreams)
//	  → upstream  Client.CallTool: the call noted in flight (a request
//	              the server makes meanwhile goes to this host), the exact
//	              argument bytes out, the answer read
//	  → gate      the outcome: output schema, result_bytes, labels added,
//	              the outcome queued for the ledger
//	  → proxy     toolAnswer: the server's own bytes as the result,
//	              the answer line built around them (methods.go), the
//	              secrets redacted (redact.go, recorded through gate),
//	              the line written.
//
// A prompts/get and a resources/read walk the same way (Client.GetPrompt,
// ReadResource: upstream builds the request around the name or URI and the
// argument bytes gate checked, as it does a tools/call's). What reaches
// into proxy from gate is a lookup or a relay, never a decision: Upstreams
// is a read of the proxy's map of connected servers at the forward;
// OnProgress relays the server's progress, when the host asked for it; a
// held call reaches its host through Progress and AskHost. A request whose
// target was withdrawn since the host's list is refused and recorded as
// Shown names it (Shown.withdrawn), never forwarded. A server's own
// request (sampling, elicitation, roots) walks the other way: upstream →
// proxy → gate → proxy (the host, through the Forwarder proxy gives Run) →
// gate.
//
// The view is gate's (view.go: ComputeView, what the host sees and why
// the rest is withheld; exposure.go: which definitions are pinned,
// refused or withheld, and trust on first use; shown.go: the view shown
// now); proxy gives it the listings and pins and mcp-go's Presenter, and
// lists to the host what it shows.
package gate
