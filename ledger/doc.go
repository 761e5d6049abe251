// Package ledger owns mcp-guard's SQLite file: the hardened open, the schema,
// transactions, the hash-chained event log, group commit, paged reads and
// verification. Until the ledger lands, the proxy records to its own log
// only; see docs/safety.md for what that does and does not hold.
package ledger
