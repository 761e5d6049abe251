// Command fakeup is the scriptable, hostile fake MCP server mcp-guard's
// end-to-end tests run as an upstream; see internal/fakeupstream.
package main

import "github.com/mcp-guard/mcp-guard/internal/fakeupstream"

func main() { fakeupstream.Main() }
