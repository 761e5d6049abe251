package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mcp-guard/mcp-guard/hostconfig"
	"github.com/mcp-guard/mcp-guard/pin"
)

// cmdUnwrap puts back the Claude Desktop config as it was before
// `mcp-guard wrap`, byte for byte, unless it was edited since the wrap.
func cmdUnwrap(args []string, c cli) error {
	flags := newFlagSet("unwrap")
	from := flags.String("from", "", "the host's config file (default: where the host keeps it)")
	host := flags.String("host", "", "the MCP host whose config to restore: "+strings.Join(hostconfig.Names(), ", "))
	force := flags.Bool("force", false, "restore the backup even if the file was edited since wrap (the edits are lost)")
	if err := parseFlags(flags, args, c); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageErr("unwrap: unexpected argument %q", flags.Arg(0))
	}
	hf, err := resolveHost("unwrap", *host, *from, c, true)
	if err != nil {
		return err
	}
	if hf.files != nil {
		return unwrapHost(hf, *force, c)
	}
	path, err := desktopPath("unwrap", hf.from, c)
	if err != nil {
		return err
	}
	saved, err := hostconfig.ReadSaved(path)
	if err != nil {
		return fmt.Errorf("unwrap: %w", err)
	}
	if saved.Backup == nil {
		return &exitError{code: 1, err: fmt.Errorf("unwrap: not wrapped by mcp-guard: no backup at %s", hostconfig.BackupPath(path))}
	}
	cur, err := hostconfig.Read(path)
	gone := errors.Is(err, fs.ErrNotExist)
	if err != nil && !gone {
		return fmt.Errorf("unwrap: %w", err)
	}
	if !gone && !saved.Unchanged(cur) {
		if !*force {
			return &exitError{code: 1, err: fmt.Errorf("unwrap: %s was changed since mcp-guard wrapped it:\n%s"+
				"restoring the backup %s would lose those changes; `mcp-guard unwrap --force` restores it anyway",
				path, whatChanged(path, saved, cur), hostconfig.BackupPath(path))}
		}
		fmt.Fprintf(c.stdout, "--force: the changes made to %s since wrap are lost\n", path)
	}
	if err := hostconfig.Restore(path, saved); err != nil {
		return fmt.Errorf("unwrap: %w", err)
	}
	fmt.Fprintf(c.stdout, "restored %s byte for byte from %s and removed the backup; restart Claude Desktop to use it\n", path, hostconfig.BackupPath(path))
	return nil
}

// whatChanged says how cur differs from what wrap wrote, showing no env or
// headers value. Each line ends in a newline.
func whatChanged(path string, saved *hostconfig.Saved, cur []byte) string {
	if saved.Wrote == nil {
		return fmt.Sprintf("  there is no record of what wrap wrote (%s is missing), so the change cannot be shown\n", hostconfig.RecordPath(path))
	}
	now, err := hostconfig.ParseDesktop(path, cur)
	if err != nil {
		return fmt.Sprintf("  it no longer parses: %v\n", err)
	}
	wrote, err := hostconfig.ParseDesktop(hostconfig.RecordPath(path), saved.Wrote)
	if err != nil {
		return fmt.Sprintf("  the record of what wrap wrote does not parse: %v\n", err)
	}
	switch {
	case bytes.Equal(compactJSON(cur), compactJSON(saved.Wrote)):
		return "  only whitespace between tokens changed\n"
	case bytes.Equal(now.Redacted(), wrote.Redacted()):
		return "  only env or headers values changed (values are not shown)\n"
	}
	return fmt.Sprintf("--- %s (as mcp-guard wrap wrote it)\n+++ %s (now)\n%s", path, path, pin.Diff(wrote.Redacted(), now.Redacted()))
}
