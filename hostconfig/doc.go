// Package hostconfig owns the MCP config files of the hosts mcp-guard can
// wrap, Claude Desktop one entry among them ([All], [Find]): where each host
// keeps them ([Host.Files]), reading their server entries ([Load]), the
// rewrite that has the host start `mcp-guard serve --server NAME` in place
// of each guarded entry ([Doc.Wrap]), and putting back exactly the entries a
// wrap changed ([Doc.Unwrap]).
//
// Every edit is a byte splice: only the bytes of a wrapped entry change, so
// comments, key order, spacing and unknown keys elsewhere in the file (JSON,
// JSONC or TOML) stay as they are, and splicing the original entries back
// gives the original file byte for byte.
//
// `mcp-guard wrap` without --host keeps its own rewrite of Claude Desktop's
// claude_desktop_config.json (desktop*.go: [DesktopPath], [LoadDesktop],
// [DesktopConfig.Wrap]): every guarded server behind one "mcp-guard" entry
// (or one entry each with --per-server), the other top-level keys and
// entries kept in their order and re-indented as Claude Desktop writes the
// file. Both rewrites keep the file from before the wrap, so it can be
// restored byte for byte ([Save], [Restore]), and write atomically (a
// temporary file in the same directory, synced, renamed over the file, the
// directory synced), keeping the file's mode ([WriteFile]).
package hostconfig
