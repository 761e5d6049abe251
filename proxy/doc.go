// Package proxy owns the MCP plumbing between one host and its upstream
// servers.
//
// The host-facing transports are each its own: stdio (each line read once,
// in the host's own session: stdiohost.go, stdiosession.go) and streamable
// HTTP (each POST read once; sessions, GET streams and DELETE:
// httpendpoint.go, httppost.go, httpsession.go). Each request goes to one
// handler per method: mcp-guard's own (methods.go: initialize,
// server/discover, ping, logging/setLevel, the four lists, tools/call,
// prompts/get, resources/read, subscribe and unsubscribe,
// subscriptions/listen, completion/complete); the fast paths, which serve
// a plain tools/call with one parse and the same handler (stdiohost.go,
// httpfast.go). A method mcp-guard does not offer (tasks among them) is
// refused; a notification is taken (dispatch.go). Each request is served
// under its host's connection (conns.go hostConn: the stdio host's, an HTTP
// session's, a 2026-07-28 request's own), and what hosts are sent unasked
// (list_changed, resources/updated, log messages, progress) goes through
// the connections: to every initialized host, a 2026-07-28 listen only
// what it opted in to. mcp-go is the source of the protocol's types and
// constants; none of its server runs.
//
// proxy also owns what each upstream's connection means to the host
// (listed, pinned, shown; withdrawn when it ends), and the relays that
// carry progress, log messages, cancellation and the servers' own requests
// between the two sides. The upstream package's Client carries the exact
// bytes and its Supervisor the restarts. What the host is shown is gate's
// view (gate.ComputeView): proxy gives it the listings, the pins and
// mcp-go's Presenter (presenter.go), and lists to the host what it shows.
//
// Every request the host was shown the target of is decided, recorded,
// held and forwarded by the gate's pipeline (gate.Pipeline.Run), which
// sends the exact bytes to the server as connected then (gate.Upstreams:
// the proxy's map of connected servers, call.go servers) and checks the
// target against what the hosts are shown now (gate.Shown, which refresh
// sets with the view); proxy reads the MCP request and answers in MCP
// terms: with the servers' own bytes, never decoded into mcp-go's types
// and encoded again (methods.go), nothing for a request the host cancelled
// (cancel.go). A request refused before the pipeline (a name the host was
// not shown, params that do not read, a modern retry that continues no
// call): gate says what the view shown knows of the target (gate.Shown's
// ToolRefusal and ItemRefusal; proxy adds the host's session, where a host
// URI goes, and a retry's reason: view.go, itemcall.go, rounds.go), and
// builds and records the row (gate.Refusal, Pipeline.Refuse); nothing of
// it is forwarded. A get of an exposed prompt whose arguments gate does
// not read as strict strings goes through the pipeline with the host's own
// bytes, never decoded otherwise (prompts.go).
//
// proxy imports neither ledger nor classify: what it records goes through
// gate (the pipeline, gate.Store and gate's record helpers: hostrecords.go,
// redactions.go), and what it reads of pins and rules is gate's view. It
// names upstream's Spec and StartInfo, what it starts.
package proxy
