// Package ledger owns mcp-guard's SQLite file: the hardened open, the schema,
// transactions, the hash-chained event log, group commit, paged reads,
// verification, and witnessed heads: the chain head committed outside the
// file (the system journal, syslog, a JSONL file; witness*.go) and checked
// against it (CheckHeads), and label scopes: the labels each host's scope
// holds, gained, declassified and ended as chained events (labels.go).
//
// One file holds everything. Open refuses a file or directory that others
// could read or write, a symlink or hard link, and any table, index, trigger
// or view the migrations did not create. Every pooled connection is checked
// when it is opened (WAL, synchronous=FULL, foreign keys, trusted_schema off,
// defensive mode, busy timeout) and refused otherwise. Commits are synced
// with fdatasync where the platform has it.
//
// All writes go through one writer connection per Ledger (Write), led by one
// caller at a time: concurrent operations are batched into one BEGIN
// IMMEDIATE ... COMMIT, each inside its own savepoint (a batch of calls'
// decisions and outcomes runs without, and again with them if one fails),
// and every caller is answered only after the commit holding
// its operation has returned. Several processes may share one file; BEGIN
// IMMEDIATE and the busy timeout serialize them, and the chain head is read
// inside each transaction, so their events form one hash chain.
//
// The package is for unix systems (it relies on owner, mode and link counts).
// The process embedding it should never os.Open the database files while a
// Ledger is open: closing any descriptor of the file drops SQLite's POSIX
// locks. A binary may call sqlite.OFDLocking(true) before its first
// connection to be immune to that.
package ledger
