// Package desktop owns reading and rewriting the Claude Desktop config file
// (claude_desktop_config.json): where it is on each OS ([DefaultPath]), its
// mcpServers entries in file order ([Load]), the rewrite that has the host
// start mcp-guard instead of each guarded server ([Config.Wrap]), and the
// backup that lets the rewrite be undone byte for byte ([Save], [Restore]).
//
// The file holds other settings of Claude Desktop too: a rewrite keeps every
// top-level key and every entry it does not replace, in their order, and
// only re-indents them (2 spaces, as Claude Desktop writes the file). Every
// write is atomic (a temporary file in the same directory, synced, renamed
// over the file, the directory synced) and keeps the file's mode.
package desktop
