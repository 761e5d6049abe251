package sandbox

import (
	"fmt"
	"strconv"
)

// Command is the hidden mcp-guard subcommand that is the launcher.
const Command = "sandbox-exec"

// Launch is how mcp-guard starts a sandboxed server: the argv that runs
// the launcher (self, the mcp-guard binary) on program and args. The
// environment is left to the caller: the launcher passes on exactly the
// one it was given. abiMax > 0 makes the launcher act as if the kernel's
// Landlock ABI were at most abiMax (tests of the fail-closed path).
func Launch(self string, p Policy, abiMax int, program string, args []string) []string {
	argv := []string{self, Command}
	if abiMax > 0 {
		argv = append(argv, "--abi-max", strconv.Itoa(abiMax))
	}
	argv = append(argv, p.Encode(), "--", program)
	return append(argv, args...)
}

// parseLaunch reads the launcher's arguments (after the subcommand).
func parseLaunch(args []string) (p Policy, abiMax int, argv []string, err error) {
	if len(args) >= 2 && args[0] == "--abi-max" {
		abiMax, err = strconv.Atoi(args[1])
		if err != nil || abiMax < 0 {
			return Policy{}, 0, nil, fmt.Errorf("sandbox: --abi-max %q", args[1])
		}
		args = args[2:]
	}
	if len(args) < 3 || args[1] != "--" {
		return Policy{}, 0, nil, fmt.Errorf("sandbox: usage: mcp-guard %s [--abi-max N] POLICY -- PROGRAM [ARGS...]", Command)
	}
	p, err = Decode(args[0])
	if err != nil {
		return Policy{}, 0, nil, err
	}
	return p, abiMax, args[2:], nil
}

// Effective ABI: what the kernel has, capped by abiMax when set.
func capABI(abi, abiMax int) int {
	if abiMax > 0 && abiMax < abi {
		return abiMax
	}
	return abi
}

// ProbePlan is the plan for p on this kernel, abiMax as in Launch.
func ProbePlan(p Policy, goos string, abiMax int) Plan {
	abi, sec := Probe()
	return PlanFor(p, goos, capABI(abi, abiMax), sec)
}
