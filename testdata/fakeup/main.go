// Command fakeup is the scriptable, hostile fake MCP server mcp-guard's
// end-to-end tests run as an upstream; see testdata/fakeupstream.
package main

import "github.com/mcp-guard/mcp-guard/testdata/fakeupstream"

func main() { fakeupstream.Main() }
