// Package export owns mcp-guard's OpenTelemetry export ([export] otlp and
// the otlp witness): each decision and outcome the ledger records, taken
// from the gate's store it wraps, and each chain head a witness commits,
// sent to a collector as OTLP/HTTP protobuf log records and spans. It encodes
// the OTLP messages itself (protowire only, no SDK), queues them in a
// bounded buffer off the host's path, batches, retries with backoff, and
// counts what it exported, dropped and failed to send. A collector that is
// down or slow never blocks or fails a call.
package export
