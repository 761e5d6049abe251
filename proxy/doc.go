// Package proxy owns the MCP plumbing between one host and its upstream
// servers: the host-facing server (mcp-go's MCPServer over stdio, the stdio
// fast path, the HTTP host), the supervision and restart of the upstream
// clients (package upstream: mcp-guard's own exact-bytes client, so the
// bytes it forwards are the bytes it checked), and the relays that carry
// progress, log messages, cancellation and the servers' own requests
// between the two sides. Every request is decided, recorded, held and forwarded by the
// gate's pipeline (gate.Pipeline); proxy reads the MCP request, forwards
// the exact bytes when the pipeline says so, and answers in MCP terms.
package proxy
