// Package gate owns the one enforcement pipeline every request runs
// through: tools/call, prompts/get, resources/read and resources/subscribe
// from the host, and sampling/createMessage, elicitation/create and
// roots/list from an upstream. Pipeline.Run takes a request through strict reading, exposure
// still current, the operator's rules and predicates, the pinned schema,
// flows (the labels the host's scope holds, against the request's class;
// flows.go), the session's limits, L7 (interrupted calls), the commit to
// the ledger (which checks L7 and, for an allowed call decided on the
// labels the process knew, that the scope still holds exactly those), a grant or the operator's approval
// hold, the forward (through a Forwarder the proxy gives it) and the
// outcome, which adds the deciding rule's labels to the scope before the
// host reads the result; a table says which stages apply to each kind.
// Anything it does not recognise fails closed.
package gate
