// Package hosts owns the MCP config files of the hosts mcp-guard can wrap
// besides Claude Desktop (see internal/desktop): where each host keeps them
// ([All], [Host.Files]), reading their server entries ([Load]), the rewrite
// that has the host start `mcp-guard serve --server NAME` in place of each
// guarded entry ([Doc.Wrap]), and putting back exactly the entries a wrap
// changed ([Doc.Unwrap]).
//
// Every edit is a byte splice: only the bytes of a wrapped entry change, so
// comments, key order, spacing and unknown keys elsewhere in the file (JSON,
// JSONC or TOML) stay as they are, and splicing the original entries back
// gives the original file byte for byte.
package hosts
