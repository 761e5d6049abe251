package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ForCommand is how command (argv as configured) runs under the configured
// policy user: the program file the launcher executes (found on
// mcp-guard's PATH as exec.Command finds it; a relative path is taken from
// dir, the server's working directory, else mcp-guard's) and the effective
// policy, runtime defaults included. home is mcp-guard's $HOME ("": none).
// It is worked out at each start, so a server installed after mcp-guard
// started is found.
func ForCommand(user Policy, command []string, dir, home string) (program string, eff Policy, err error) {
	if len(command) == 0 || command[0] == "" {
		return "", Policy{}, fmt.Errorf("sandbox: empty command")
	}
	base := dir
	if base == "" {
		base, _ = os.Getwd()
	}
	absolute := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	program = command[0]
	if !strings.Contains(program, "/") {
		program, err = exec.LookPath(program)
		if err != nil {
			return "", Policy{}, err
		}
	}
	program = absolute(program)
	args := make([]string, 0, len(command)-1)
	for _, a := range command[1:] {
		args = append(args, absolute(a)) // Effective keeps those that name an existing file
	}
	return program, Effective(user, program, args, home), nil
}
