package upstream

// TraceStage is the runtime/trace log category of the marks a call's
// stages leave (ledger.TraceStage, which upstream does not import): here
// its request sent upstream and the upstream's line read
// (scripts/trace-call).
const TraceStage = "mcp-guard stage"
