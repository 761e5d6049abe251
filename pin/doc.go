// Package pin owns what an upstream said its tools are: it splits the raw
// bytes of a tools/list result into the exact bytes of each tool, reads the
// fields mcp-guard needs from those bytes, and computes the digest a pin is
// made of. Later it also owns pin states, diffs, schema compilation and the
// text checks; it knows nothing of MCP sessions.
package pin
