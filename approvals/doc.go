// Package approvals owns approval records: what an `ask` decision binds, the
// digest of what the operator was shown, single-use grants, and the sanitised,
// bounded display an operator decides from. It is not built yet: an `ask`
// rule currently refuses the call and says approvals are not available.
package approvals
