// Package proxy owns the MCP plumbing between one host and its upstream
// servers: the host-facing server (mcp-go's MCPServer over stdio), the
// upstream connections (a JSON-RPC line protocol mcp-guard speaks itself, so
// the bytes it forwards are the bytes it checked), the child processes behind
// them, and the relays that carry progress and cancellation between the two
// sides. Every tools/call goes through the gate before it is forwarded.
package proxy
