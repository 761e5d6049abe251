package classify

import "fmt"

// Class is what a tool call does, as the operator classifies it.
type Class string

// The classes.
const (
	Read        Class = "read"
	Write       Class = "write"
	Destructive Class = "destructive"
	Network     Class = "network"
	Exec        Class = "exec"
)

// Action is what happens to a call a rule matches.
type Action string

// The actions.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// ParseClass returns the class named s exactly (case-sensitive).
func ParseClass(s string) (Class, error) {
	switch c := Class(s); c {
	case Read, Write, Destructive, Network, Exec:
		return c, nil
	}
	return "", fmt.Errorf("unknown class %q (want read, write, destructive, network or exec)", s)
}

// ParseAction returns the action named s exactly (case-sensitive).
func ParseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", fmt.Errorf("unknown action %q (want allow, ask or deny)", s)
}
