// Package approvals owns what an `ask` decision binds and what the operator
// reads: the presentation of a held call (sanitised and bounded, so the model
// or a server cannot rewrite what the operator sees; a full view shows every
// byte, and only its digest decides an approval), the binding digest over
// the call and that presentation, and the check that a stored approval is
// still bound to exactly what it says (a tampered row is refused). The
// records and their transitions live in the ledger.
package approvals
