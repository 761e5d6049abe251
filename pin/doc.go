// Package pin owns what an upstream said its tools are: it splits the raw
// bytes of a tools/list result into the exact bytes of each tool, reads the
// fields mcp-guard needs from those bytes, and computes the digest a pin is
// made of. It does the same for the items of prompts/list, resources/list
// and resources/templates/list (content.go), pinned beside the tools under
// the names "prompt:NAME", "resource:URI" and "template:URI-TEMPLATE". It
// also owns diffs, schema compilation and the text checks; it knows nothing
// of MCP sessions.
package pin
