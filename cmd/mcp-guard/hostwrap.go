package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/hostconfig"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/pin"
)

// wrapHost wraps each file of a host other than Claude Desktop: each
// guarded entry is replaced where it is by one that starts `mcp-guard serve
// --server NAME`, and nothing else in the file changes.
func wrapHost(hf *hostFiles, cfg *config.Config, cfgPath, bin string, dryRun bool, c cli) error {
	guard := map[string]bool{}
	for _, s := range cfg.Servers {
		guard[s.Name] = true
	}
	// Every serve this host starts shares the host's label scope (flows):
	// a read through one server holds a send through another.
	o := hostconfig.WrapOptions{Bin: bin, Config: cfgPath, Guard: guard, Scope: hf.host.Name}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	guarded, wrappedBefore := 0, false
	for _, f := range hf.files {
		cur, err := hostconfig.Load(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return usageErr("wrap: there is no %s config at %s (give --from FILE)", hf.host.Title, f.Path)
		case err != nil:
			return usageErr("wrap: %v; the file is left as it is", err)
		}
		saved, err := hostconfig.ReadSaved(f.Path)
		if err != nil {
			return fmt.Errorf("wrap: %w", err)
		}
		src := cur
		if !f.HostRewrites && saved.Backup != nil {
			// Wrap again from the original, so that a changed mcp-guard
			// config gives the same file as a first wrap would.
			if !saved.Unchanged(cur.Raw) {
				return &exitError{code: 1, err: fmt.Errorf("wrap: %s was changed since mcp-guard wrapped it, and %s holds the file from before the wrap; a backup is never overwritten, so wrap stops here. `mcp-guard unwrap%s` restores the backup (--force if the changes may go); then wrap again", f.Path, hostconfig.BackupPath(f.Path), hf.flag())}
			}
			if src, err = hostconfig.Parse(f, saved.Backup); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("wrap: the backup no longer parses, so it cannot be wrapped again: %w", err)}
			}
		}
		rw := src.Wrap(o)
		writeHostReport(c.stdout, f, rw, cfg)
		guarded += len(rw.Guarded)
		wrappedBefore = wrappedBefore || slices.ContainsFunc(rw.Skipped, func(s hostconfig.Skip) bool { return s.StartsGuard })
		if bytes.Equal(rw.Bytes, cur.Raw) {
			fmt.Fprintf(c.stdout, "already wrapped: %s is what this wrap would write; nothing changed\n", f.Path)
			continue
		}
		next, err := hostconfig.Parse(f, rw.Bytes)
		if err != nil {
			return fmt.Errorf("wrap: the rewrite of %s does not parse (a bug; nothing written): %w", f.Path, err)
		}
		if dryRun {
			for _, e := range rw.Guarded {
				i := slices.IndexFunc(next.Entries, func(n hostconfig.Entry) bool { return n.Name == e.Name && slices.Equal(n.Where, e.Where) })
				fmt.Fprintf(c.stdout, "--- %s: %s\n+++ %s: %s (wrapped)\n", f.Path, esc(e.Scope()+"."+e.Name), f.Path, esc(e.Scope()+"."+e.Name))
				io.WriteString(c.stdout, pin.Diff([]byte(src.Redacted(e)), []byte(next.Redacted(next.Entries[i]))))
			}
			fmt.Fprintf(c.stdout, "dry run: %s not written (env and headers values are shown as [redacted]); only the entries above would change\n", f.Path)
			continue
		}
		if f.HostRewrites {
			changes, err := readChanges(f.Path)
			if err != nil {
				return fmt.Errorf("wrap: %w", err)
			}
			b, _ := json.MarshalIndent(append(changes, rw.Changes...), "", "  ")
			if err := hostconfig.WriteFile(entriesPath(f.Path), b, 0o600); err != nil {
				return fmt.Errorf("wrap: write %s: %w", entriesPath(f.Path), err)
			}
		}
		if err := hostconfig.Save(f.Path, cur.Raw, rw.Bytes, saved); err != nil {
			return fmt.Errorf("wrap: %w", err)
		}
		if saved.Backup == nil {
			fmt.Fprintf(c.stdout, "saved the original as %s\n", hostconfig.BackupPath(f.Path))
		}
		fmt.Fprintf(c.stdout, "wrote %s; restart %s to use it (`mcp-guard unwrap --host %s` undoes it)\n", f.Path, hf.host.Title, hf.host.Name)
	}
	if guarded == 0 && !wrappedBefore {
		return &exitError{code: 1, err: fmt.Errorf("wrap: nothing to wrap: no entry of the %s config is a [[server]] of %s", hf.host.Title, cfgPath)}
	}
	return nil
}

func esc(s string) string { return safetext.Show(s, 200) }

func escAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = esc(s)
	}
	return out
}

// writeHostReport says which entries are guarded and which are not, and why.
func writeHostReport(w io.Writer, f hostconfig.File, rw *hostconfig.Rewrite, cfg *config.Config) {
	label := func(scope, name string) string {
		if scope == strings.Join(f.Servers, ".") {
			return esc(name)
		}
		return esc(name) + " (" + esc(scope) + ")"
	}
	var names []string
	for _, e := range rw.Guarded {
		names = append(names, label(e.Scope(), e.Name))
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	fmt.Fprintf(w, "%s: guarded: %s\n", f.Path, strings.Join(names, ", "))
	for _, s := range rw.Skipped {
		fmt.Fprintf(w, "not guarded: %s (%s)\n", label(s.Scope, s.Name), esc(s.Reason))
	}
	for _, e := range rw.Guarded {
		i := slices.IndexFunc(cfg.Servers, func(s config.ServerConfig) bool { return s.Name == e.Name })
		gs := cfg.Servers[i]
		if e.URL != gs.URL || (e.URL == "" && !slices.Equal(append([]string{e.Command}, e.Args...), gs.Command)) {
			fmt.Fprintf(w, "note: %s: [[server]] %s of %s is not what this entry ran (another command or url); mcp-guard runs the config's\n", esc(e.Name), esc(e.Name), cfg.Path())
		}
		var missing []string
		for _, k := range f.KeptRefs(e) {
			if !slices.Contains(gs.PassEnv, k) {
				missing = append(missing, esc(k))
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(w, "note: %s: env %s stays a reference the host expands; add it to pass_env of [[server]] %s or the server does not get it\n", esc(e.Name), strings.Join(missing, ", "), esc(e.Name))
		}
	}
}

// unwrapHost undoes wrapHost. A file only the user edits is restored byte
// for byte from its backup; a file the host rewrites itself gets back
// exactly the entries wrap replaced, and keeps every other change.
func unwrapHost(hf *hostFiles, force bool, c cli) error {
	for _, f := range hf.files {
		saved, err := hostconfig.ReadSaved(f.Path)
		if err != nil {
			return fmt.Errorf("unwrap: %w", err)
		}
		if saved.Backup == nil {
			return &exitError{code: 1, err: fmt.Errorf("unwrap: not wrapped by mcp-guard: no backup at %s", hostconfig.BackupPath(f.Path))}
		}
		if !f.HostRewrites {
			cur, err := hostconfig.Read(f.Path)
			gone := errors.Is(err, fs.ErrNotExist)
			if err != nil && !gone {
				return fmt.Errorf("unwrap: %w", err)
			}
			if !gone && !saved.Unchanged(cur) {
				if !force {
					return &exitError{code: 1, err: fmt.Errorf("unwrap: %s was changed since mcp-guard wrapped it; restoring the backup %s would lose those changes; `mcp-guard unwrap --host %s --force` restores it anyway", f.Path, hostconfig.BackupPath(f.Path), hf.host.Name)}
				}
				fmt.Fprintf(c.stdout, "--force: the changes made to %s since wrap are lost\n", f.Path)
			}
			if err := hostconfig.Restore(f.Path, saved); err != nil {
				return fmt.Errorf("unwrap: %w", err)
			}
			fmt.Fprintf(c.stdout, "restored %s byte for byte from %s and removed the backup; restart %s to use it\n", f.Path, hostconfig.BackupPath(f.Path), hf.host.Title)
			continue
		}
		cur, err := hostconfig.Load(f)
		if err != nil {
			return usageErr("unwrap: %v; the file is left as it is", err)
		}
		changes, err := readChanges(f.Path)
		if err != nil {
			return fmt.Errorf("unwrap: %w", err)
		}
		u := cur.Unwrap(changes, force)
		if len(u.Left) > 0 && !force {
			return &exitError{code: 1, err: fmt.Errorf("unwrap: in %s, these entries are not as wrap wrote them, so they are not put back:\n  %s\nnothing written; `mcp-guard unwrap --host %s --force` puts back the originals of those still there", f.Path, strings.Join(escAll(u.Left), "\n  "), hf.host.Name)}
		}
		fi, err := os.Stat(f.Path)
		if err != nil {
			return fmt.Errorf("unwrap: %w", err)
		}
		if err := hostconfig.WriteFile(f.Path, u.Bytes, fi.Mode().Perm()); err != nil {
			return fmt.Errorf("unwrap: write %s: %w", f.Path, err)
		}
		for _, p := range []string{entriesPath(f.Path), hostconfig.RecordPath(f.Path), hostconfig.BackupPath(f.Path)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("unwrap: remove %s: %w", p, err)
			}
		}
		if bytes.Equal(u.Bytes, saved.Backup) {
			fmt.Fprintf(c.stdout, "restored %s byte for byte (it had not changed since wrap) and removed the backup; restart %s to use it\n", f.Path, hf.host.Title)
		} else {
			fmt.Fprintf(c.stdout, "put back the %d entries wrap replaced in %s (%s); %s rewrites this file itself, so every other change made since wrap is kept; removed the backup\n",
				len(u.Restored), f.Path, esc(strings.Join(u.Restored, ", ")), hf.host.Title)
		}
		for _, l := range u.Left {
			fmt.Fprintf(c.stdout, "--force: not put back: %s\n", esc(l))
		}
	}
	return nil
}
