package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// Whatever a command prints on stderr (here an error naming a config path
// with raw escapes in it) goes through the printer: escaped, never raw. A
// command's own text is unchanged.
func TestRun_StderrGoesThroughThePrinter(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	c := cli{stdout: &out, stderr: &errOut, env: func(string) (string, bool) { return "", false }}
	path := filepath.Join(t.TempDir(), hostile+".toml")
	if code := run([]string{"check", "--config", path}, c); code != 2 {
		t.Fatalf("check of a missing config exited %d:\n%s", code, errOut.String())
	}
	checkNoRawControl(t, "check stderr", errOut.String())
	if !strings.Contains(errOut.String(), `\u{001B}[31mRED\u{001B}]0;pwned\u{0007}`) || !strings.Contains(errOut.String(), "mcp-guard: ") {
		t.Fatalf("the error is not shown escaped:\n%s", errOut.String())
	}
	out.Reset()
	if code := run([]string{"version"}, c); code != 0 || out.String() != "mcp-guard dev\n" {
		t.Fatalf("version: %q", out.String())
	}
}
