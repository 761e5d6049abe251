// Package proxy owns the MCP plumbing between one host and its upstream
// servers: the host-facing server (mcp-go's MCPServer over stdio), the
// upstream connections (a JSON-RPC line protocol mcp-guard speaks itself, so
// the bytes it forwards are the bytes it checked), the child processes behind
// them, and the relays that carry progress and cancellation between the two
// sides. Every request is decided, recorded, held and forwarded by the
// gate's pipeline (gate.Pipeline); proxy reads the MCP request, forwards
// the exact bytes when the pipeline says so, and answers in MCP terms.
package proxy
