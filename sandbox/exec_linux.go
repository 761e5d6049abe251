package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Exec is the launcher: args are what follows "mcp-guard sandbox-exec". It
// confines this thread (no_new_privs, Landlock, seccomp) and execs the
// program with the environment the launcher was started with, unchanged.
// It returns only on failure: then nothing was started. Where the kernel
// cannot enforce all of the policy it refuses, unless the policy is best
// effort.
func Exec(args []string) error {
	p, abiMax, program, argv, err := parseLaunch(args)
	if err != nil {
		return err
	}
	// Landlock, seccomp and no_new_privs are per thread until execve,
	// which keeps only the calling thread: all of it must happen on one.
	runtime.LockOSThread()
	pl := ProbePlan(p, runtime.GOOS, abiMax)
	if !pl.Complete() && !p.BestEffort {
		return pl.Refusal()
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if err := landlock(p, pl.ABI); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if pl.Seccomp {
		if err := installSeccomp(p.Network); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := unix.Exec(program, argv, os.Environ()); err != nil {
		return fmt.Errorf("sandbox: exec %s: %w", program, err)
	}
	return nil
}
