//go:build !linux

package sandbox

import (
	"errors"
	"runtime"
)

// Probe is what this kernel can enforce: nothing, off Linux.
func Probe() (abi int, seccomp bool) { return 0, false }

// Exec is the launcher; off Linux it refuses.
func Exec(args []string) error {
	return errors.New("sandbox: not available on " + runtime.GOOS + ": [server.sandbox] needs Linux (Landlock and seccomp)")
}
