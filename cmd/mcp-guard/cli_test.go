package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCLI runs the testscript files in testdata/script: the CLI as a user
// runs it, with its output and exit codes.
func TestCLI(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("HOME", e.WorkDir+"/home")
			e.Setenv("XDG_CONFIG_HOME", "")
			e.Setenv("XDG_STATE_HOME", "")
			// What `mcp-guard wrap` writes as the command: the binary
			// testscript runs as mcp-guard, symlinks resolved.
			bin, err := exec.LookPath("mcp-guard")
			if err == nil {
				bin, err = filepath.EvalSymlinks(bin)
			}
			if err != nil {
				return err
			}
			e.Setenv("MCP_GUARD_BIN", bin)
			// The README, for scripts that hold it to what the CLI does.
			readme, err := filepath.Abs("../../README.md")
			if err != nil {
				return err
			}
			e.Setenv("README", readme)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// mode PERM file: require the file's permission bits, e.g. mode 0600 f.
			"mode": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: mode PERM file")
				}
				want, err := strconv.ParseUint(args[0], 8, 32)
				if err != nil {
					ts.Fatalf("mode: %v", err)
				}
				fi, err := os.Stat(ts.MkAbs(args[1]))
				ts.Check(err)
				if got := fi.Mode().Perm(); got != os.FileMode(want) {
					ts.Fatalf("%s has mode %#o, want %#o", args[1], got, want)
				}
			},
			// exitcode N cmd args...: run cmd and require exit code N.
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exitcode N command [args...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exitcode: %v", err)
				}
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("exitcode: %v", err)
				}
				if got != want {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
		},
	})
}
