// Package gate owns the one enforcement pipeline every request runs
// through: tools/call, prompts/get, resources/read and resources/subscribe
// from the host, and sampling/createMessage, elicitation/create and
// roots/list from an upstream. Pipeline.Run takes a request through strict reading, exposure
// still current, the operator's rules and predicates, the pinned schema,
// flows (the labels the host's scope holds, against the request's class;
// flows.go), the session's limits, L7 (interrupted calls), the commit to
// the ledger (which checks L7 and, for an allowed call decided on the
// labels the process knew, that the scope still holds exactly those), a grant or the operator's approval
// hold, the forward (to the server, through Upstreams) and the
// outcome, which adds the deciding rule's labels to the scope before the
// host reads the result; a table says which stages apply to each kind.
// Anything it does not recognise fails closed. A request refused before
// the pipeline decides it (a name the host was not shown, a request that
// could not be read) is a Refusal: its ledger row is built here too.
//
// # One allowed tools/call, as it walks today
//
// On the stdio host (the HTTP host differs only in its first and last
// steps: httppost.go, httpfast.go), each arrow a package crossing:
//
//	proxy   stdiohost.go reads the line, parses the call (its fast path,
//	        or methods.go's tools/call handler), call.go builds a Request
//	  → gate      Pipeline.Run: exposure still current
//	  → proxy     Request.Current: the view's pin now
//	  → gate      strict reading, rules, schema, flows, limits (Session)
//	  → ledger    the commit (RecordCall), L7 and labels checked in it
//	  → gate      the forward (send): the server as connected now, from
//	              Upstreams (a map read in proxy, servers.Upstream)
//	  → upstream  Client.CallTool: the call noted in flight (a request
//	              the server makes meanwhile goes to this host), the exact
//	              argument bytes out, progress handed to OnProgress, the
//	              answer read
//	  → gate      the outcome: output schema, result_bytes, labels added,
//	              the outcome queued for the ledger
//	  → proxy     toolAnswer: the server's own bytes as the result,
//	              the answer line built around them (methods.go), the
//	              secrets redacted (redact.go, recorded through gate),
//	              the line written.
//
// The shape this is moving to (issue 41): proxy → gate → upstream → gate,
// so that Current no longer crosses back into proxy. A prompts/get and a
// resources/read are forwarded the same way (Request.Method, Params); a
// server's own request goes the other way, to the host, through a
// Forwarder proxy gives Run. The view is gate's (view.go: ComputeView,
// what the host sees and why the rest is withheld; exposure.go: which
// definitions are pinned, refused or withheld, and trust on first use);
// proxy gives it the listings and pins and mcp-go's Presenter, and lists
// to the host what it shows.
package gate
