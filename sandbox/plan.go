package sandbox

import (
	"fmt"
	"strings"
)

// A feature is one part of a policy the kernel enforces, and the Landlock
// ABI it needs (0: not Landlock).
type feature struct {
	name string
	abi  int
}

var (
	featFS       = feature{"Landlock filesystem rules", 1}
	featTruncate = feature{"Landlock truncate rule", 3}
	featTCP      = feature{"Landlock TCP bind/connect rules", 4}
	featScopes   = feature{"Landlock signal and abstract unix socket scopes", 6}
	featSeccomp  = feature{"seccomp socket filter", 0}
)

// Plan is what a kernel enforces of a policy: the Landlock ABI found, the
// features applied and those the kernel lacks.
type Plan struct {
	OS       string // "linux", else the sandbox is refused whole
	ABI      int    // 0: no Landlock
	Seccomp  bool   // a seccomp filter can be installed (linux, amd64 or arm64)
	Enforced []string
	Missing  []string
}

// PlanFor is what a kernel with the given Landlock ABI and seccomp support
// enforces of p.
func PlanFor(p Policy, goos string, abi int, seccomp bool) Plan {
	pl := Plan{OS: goos, ABI: abi, Seccomp: seccomp}
	if goos != "linux" {
		pl.Missing = []string{"a sandbox on " + goos + " (Linux only: Landlock and seccomp)"}
		return pl
	}
	need := []feature{featFS, featTruncate, featTCP, featScopes, featSeccomp}
	if p.Network.Mode == NetAll {
		need = []feature{featFS, featTruncate, featScopes}
	}
	for _, f := range need {
		ok := abi >= f.abi && (f.abi > 0 || seccomp)
		if ok {
			pl.Enforced = append(pl.Enforced, f.name)
		} else if f.abi > 0 {
			pl.Missing = append(pl.Missing, fmt.Sprintf("%s (Landlock ABI %d)", f.name, f.abi))
		} else {
			pl.Missing = append(pl.Missing, f.name+" (this architecture)")
		}
	}
	return pl
}

// Complete reports whether everything the policy asks is enforced.
func (pl Plan) Complete() bool { return len(pl.Missing) == 0 }

// Refusal is the error a server that cannot be sandboxed gets: what is
// missing and the ABI found.
func (pl Plan) Refusal() error {
	if pl.OS != "linux" {
		return fmt.Errorf("sandbox: not available on %s: [server.sandbox] needs Linux (Landlock and seccomp); remove the sandbox section to run this server unconfined", pl.OS)
	}
	return fmt.Errorf("sandbox: this kernel cannot enforce %s (Landlock ABI found: %d); the server is not started; set best_effort = true in [server.sandbox] to start it with what the kernel enforces",
		strings.Join(pl.Missing, ", "), pl.ABI)
}

// Summary says in one line what is enforced and what is not.
func (pl Plan) Summary() string {
	if pl.OS != "linux" {
		return "not available on " + pl.OS
	}
	s := fmt.Sprintf("Landlock ABI %d; enforced: %s", pl.ABI, strings.Join(pl.Enforced, ", "))
	if len(pl.Missing) > 0 {
		s += "; NOT enforced: " + strings.Join(pl.Missing, ", ")
	}
	return s
}
