// Package gate owns the decision for one tools/call: it reads the arguments,
// applies the operator's rules and answers allow, deny or refuse, with the
// rule and the reason, before anything is forwarded. Schema validation,
// limits, approvals and recording in the ledger join the pipeline here as
// they land; anything the gate does not recognise fails closed.
package gate
