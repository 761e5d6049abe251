package sandbox

import (
	"fmt"
	"strconv"
)

// Command is the hidden mcp-guard subcommand that is the launcher.
const Command = "sandbox-exec"

// Launch is how mcp-guard starts a sandboxed server: the argv that runs
// the launcher (self, the mcp-guard binary) on program (the file to
// execute) with argv (argv[0] as the config wrote it, then the arguments). The
// environment is left to the caller: the launcher passes on exactly the
// one it was given. abiMax > 0 makes the launcher act as if the kernel's
// Landlock ABI were at most abiMax (tests of the fail-closed path).
func Launch(self string, p Policy, abiMax int, program string, argv []string) []string {
	out := []string{self, Command}
	if abiMax > 0 {
		out = append(out, "--abi-max", strconv.Itoa(abiMax))
	}
	out = append(out, p.Encode(), program, "--")
	return append(out, argv...)
}

// parseLaunch reads the launcher's arguments (after the subcommand).
func parseLaunch(args []string) (p Policy, abiMax int, program string, argv []string, err error) {
	if len(args) >= 2 && args[0] == "--abi-max" {
		abiMax, err = strconv.Atoi(args[1])
		if err != nil || abiMax < 0 {
			return Policy{}, 0, "", nil, fmt.Errorf("sandbox: --abi-max %q", args[1])
		}
		args = args[2:]
	}
	if len(args) < 4 || args[2] != "--" {
		return Policy{}, 0, "", nil, fmt.Errorf("sandbox: usage: mcp-guard %s [--abi-max N] POLICY PROGRAM -- ARGV0 [ARGS...]", Command)
	}
	p, err = Decode(args[0])
	if err != nil {
		return Policy{}, 0, "", nil, err
	}
	return p, abiMax, args[1], args[3:], nil
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
