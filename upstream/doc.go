// Package upstream is mcp-guard's own MCP client for the servers it guards:
// it starts a stdio server as a child (an explicit environment, its own
// process group, its stderr in a private log, mcp-guard's own Wait) or
// connects to one over streamable HTTP or legacy SSE, initializes it, and
// carries JSON-RPC with every payload kept as raw bytes, so what mcp-guard
// forwards is exactly what it checked. It walks list cursors within caps,
// forwards calls with per-call deadlines and notifications/cancelled,
// routes progress, and answers what a server asks of its client (ping,
// roots) itself. What needs the host side (relaying sampling and
// elicitation, recording refusals, relaying log messages) goes through
// Hooks the proxy sets. A Supervisor keeps one upstream connected for the
// proxy's life: the first start, restart with backoff when it ends or never
// came up, and list-changed notices paced; what a connection means (listing,
// pinning, showing its tools) is the proxy's, through the functions it sets.
package upstream
