package ledger

// TraceStage is the runtime/trace log category under which mcp-guard marks
// the stages of a call: here a batch's BEGIN done, COMMIT sent and
// committed; gate, upstream and proxy mark theirs under the same name
// (upstream.TraceStage). With MCP_GUARD_TRACE set, serve's execution trace
// shows where one call's wall time goes (scripts/trace-call). When no trace
// is being taken, a mark costs an atomic load.
const TraceStage = "mcp-guard stage"
