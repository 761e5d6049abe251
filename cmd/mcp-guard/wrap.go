package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/hostconfig"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/pin"
)

// cmdWrap rewrites the Claude Desktop config so that the host starts
// mcp-guard instead of each server the mcp-guard config guards. The file as
// it was is saved beside it first, for `mcp-guard unwrap`.
//
// desktopScope is the label scope of the serve processes wrap writes: the
// host's name.
const desktopScope = "claude-desktop"

func cmdWrap(args []string, c cli) error {
	flags := newFlagSet("wrap")
	from := flags.String("from", "", "the host's config file (default: where the host keeps it)")
	host := flags.String("host", "", "the MCP host whose config to rewrite: "+strings.Join(hostconfig.Names(), ", "))
	cfgFlag := flags.String("config", "", "the mcp-guard config")
	perServer := flags.Bool("per-server", false, "replace each guarded entry by one mcp-guard serve --server NAME")
	dryRun := flags.Bool("dry-run", false, "show the change and write nothing")
	if err := parseFlags(flags, args, c); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageErr("wrap: unexpected argument %q", flags.Arg(0))
	}
	hf, err := resolveHost("wrap", *host, *from, c, false)
	if err != nil {
		return err
	}
	cfgPath, err := configPath(*cfgFlag, c.env)
	if err == nil {
		cfgPath, err = filepath.Abs(cfgPath)
	}
	if err != nil {
		return usageErr("wrap: %v", err)
	}
	if _, err := os.Stat(cfgPath); errors.Is(err, fs.ErrNotExist) {
		return usageErr("wrap: there is no mcp-guard config at %s: write one with `mcp-guard init` (or give --config F)", cfgPath)
	}
	cfg, err := config.Load(cfgPath, c.env)
	if err != nil {
		return fmt.Errorf("wrap: the mcp-guard config must load before Claude Desktop starts it (`mcp-guard check` shows this, `mcp-guard init` writes a config): %w", err)
	}
	bin, err := guardBinary()
	if err != nil {
		return fmt.Errorf("wrap: %w", err)
	}

	if hf.files != nil {
		return wrapHost(hf, cfg, cfgPath, bin, *dryRun, c)
	}
	path, err := desktopPath("wrap", hf.from, c)
	if err != nil {
		return err
	}
	cur, err := loadDesktop("wrap", path)
	if err != nil {
		return err
	}
	saved, err := hostconfig.ReadSaved(path)
	if err != nil {
		return fmt.Errorf("wrap: %w", err)
	}
	src := cur
	if saved.Backup != nil {
		// Wrap again from the original, so that a changed mcp-guard config
		// or mode gives the same file as a first wrap would.
		if !saved.Unchanged(cur.Raw) {
			return &exitError{code: 1, err: fmt.Errorf("wrap: %s was changed since mcp-guard wrapped it, and %s holds the file from before the wrap; a backup is never overwritten, so wrap stops here. `mcp-guard unwrap` shows what changed and restores the backup; then wrap again", path, hostconfig.BackupPath(path))}
		}
		if src, err = hostconfig.ParseDesktop(hostconfig.BackupPath(path), saved.Backup); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("wrap: the backup no longer parses, so it cannot be wrapped again: %w", err)}
		}
	}

	guard := map[string]bool{}
	for _, s := range cfg.Servers {
		guard[s.Name] = true
	}
	// Every serve this host starts shares the host's label scope (flows).
	rw := src.Wrap(hostconfig.DesktopOptions{Bin: bin, Config: cfgPath, Guard: guard, PerServer: *perServer, Scope: desktopScope})
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	writeWrapReport(c.stdout, rw, src, cfg, bin)
	wrappedBefore := slices.ContainsFunc(rw.Skipped, func(s hostconfig.DesktopSkip) bool { return s.StartsGuard })
	if *perServer && len(rw.Guarded) == 0 && !wrappedBefore {
		return &exitError{code: 1, err: fmt.Errorf("wrap: nothing to wrap: no stdio entry of %s is a [[server]] of %s", path, cfgPath)}
	}
	if bytes.Equal(rw.Bytes, cur.Raw) {
		fmt.Fprintf(c.stdout, "already wrapped: %s is what this wrap would write; nothing changed\n", path)
		return nil
	}
	if *dryRun {
		next, err := hostconfig.ParseDesktop(path, rw.Bytes)
		if err != nil {
			return fmt.Errorf("wrap: the rewrite does not parse (a bug): %w", err)
		}
		fmt.Fprintf(c.stdout, "--- %s\n+++ %s (wrapped)\n", path, path)
		io.WriteString(c.stdout, pin.Diff(cur.Redacted(), next.Redacted()))
		if !bytes.Equal(cur.Raw, cur.Reindented()) {
			fmt.Fprintln(c.stdout, "note: the whole file is also re-indented with 2 spaces, as Claude Desktop writes it")
		}
		fmt.Fprintln(c.stdout, "dry run: nothing written (env and headers values are shown as [redacted])")
		return nil
	}
	if err := hostconfig.Save(path, cur.Raw, rw.Bytes, saved); err != nil {
		return fmt.Errorf("wrap: %w", err)
	}
	if saved.Backup == nil {
		fmt.Fprintf(c.stdout, "saved the original as %s\n", hostconfig.BackupPath(path))
	}
	fmt.Fprintf(c.stdout, "wrote %s; restart Claude Desktop to use it (`mcp-guard unwrap` restores the original)\n", path)
	return nil
}

// writeWrapReport says which entries are guarded, which are not and why,
// and what the operator should check. It never shows an env value.
func writeWrapReport(w io.Writer, rw *hostconfig.DesktopRewrite, src *hostconfig.DesktopConfig, cfg *config.Config, bin string) {
	esc := func(s string) string { return safetext.Show(s, 200) }
	names := make([]string, len(rw.Guarded))
	for i, n := range rw.Guarded {
		names[i] = esc(n)
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	fmt.Fprintf(w, "guarded: %s\n", strings.Join(names, ", "))
	for _, s := range rw.Skipped {
		fmt.Fprintf(w, "not guarded: %s (%s)\n", esc(s.Name), esc(s.Reason))
	}
	for _, name := range rw.Guarded {
		ds := src.Servers[slices.IndexFunc(src.Servers, func(s hostconfig.DesktopServer) bool { return s.Name == name })]
		gs := cfg.Servers[slices.IndexFunc(cfg.Servers, func(s config.ServerConfig) bool { return s.Name == name })]
		if ds.URL != gs.URL || (ds.URL == "" && !slices.Equal(append([]string{ds.Command}, ds.Args...), gs.Command)) {
			fmt.Fprintf(w, "note: %s: [[server]] %s of %s is not what this entry ran (another command or url); mcp-guard runs the config's\n", esc(name), esc(name), cfg.Path())
		}
		var env, headers []string
		for k := range ds.Env {
			if _, set := gs.Env[k]; !set && !slices.Contains(gs.PassEnv, k) {
				env = append(env, esc(k))
			}
		}
		for k := range ds.Headers {
			token := strings.EqualFold(k, "Authorization") && (gs.TokenEnv != "" || gs.TokenFile != "")
			if !token && !slices.ContainsFunc(slices.Collect(maps.Keys(gs.Headers)), func(h string) bool { return strings.EqualFold(h, k) }) {
				headers = append(headers, esc(k))
			}
		}
		if len(env) > 0 {
			slices.Sort(env)
			fmt.Fprintf(w, "note: %s: the entry sets env %s, which [[server]] %s neither sets (env) nor passes (pass_env); the server may fail without it\n", esc(name), strings.Join(env, ", "), esc(name))
		}
		if len(headers) > 0 {
			slices.Sort(headers)
			fmt.Fprintf(w, "note: %s: the entry sends headers %s, which [[server]] %s does not send (headers, token_env, token_file); the server may refuse mcp-guard without them\n", esc(name), strings.Join(headers, ", "), esc(name))
		}
	}
	if rw.Replaced {
		fmt.Fprintf(w, "note: the existing %q entry is replaced\n", hostconfig.EntryName)
	}
	if strings.Contains(bin, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(w, "note: %s looks like a temporary `go run` build; wrap with a built mcp-guard (go build -o bin/mcp-guard ./cmd/mcp-guard)\n", bin)
	}
}

// desktopPath is --from, else where Claude Desktop keeps its config, made
// absolute. A symlink is followed, so that the file it names is rewritten and the link
// stays a link.
func desktopPath(cmd, from string, c cli) (string, error) {
	p := from
	if p == "" {
		var err error
		if p, err = hostconfig.DesktopPath(runtime.GOOS, c.env); err != nil {
			return "", usageErr("%s: %v (give --from FILE)", cmd, err)
		}
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", usageErr("%s: %v", cmd, err)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", fmt.Errorf("%s: %s: %w", cmd, p, err)
		}
		p = real
	}
	return p, nil
}

// loadDesktop reads the Claude Desktop config; a file that is missing or
// cannot be parsed is a config error (exit 2), and it is left as it is.
func loadDesktop(cmd, path string) (*hostconfig.DesktopConfig, error) {
	cur, err := hostconfig.LoadDesktop(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usageErr("%s: there is no Claude Desktop config at %s (give --from FILE)", cmd, path)
	case err != nil:
		return nil, usageErr("%s: %v; the file is left as it is", cmd, err)
	}
	return cur, nil
}

// guardBinary is the absolute path of this mcp-guard binary, symlinks
// resolved: what the host is to start.
func guardBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the mcp-guard binary: %w", err)
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("find the mcp-guard binary: %w", err)
	}
	return real, nil
}

// compactJSON is raw without whitespace between tokens, or raw if it is not
// JSON.
func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
