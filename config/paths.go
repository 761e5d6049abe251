package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvFunc looks up an environment variable (os.LookupEnv in mcp-guard, a
// map in tests).
type EnvFunc func(string) (string, bool)

// ExpandPath expands a leading ~ and $XDG_*/$HOME variables in a path and
// makes it absolute; a relative path or another variable is refused.
func ExpandPath(p string, env EnvFunc) (string, error) {
	var bad error
	p = os.Expand(p, func(name string) string {
		if name == "HOME" || strings.HasPrefix(name, "XDG_") {
			v, err := XDGDir(name, env)
			if err != nil {
				bad = err
			}
			return v
		}
		bad = fmt.Errorf("$%s: only $HOME and $XDG_* are expanded in paths", name)
		return ""
	})
	if bad != nil {
		return "", bad
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := XDGDir("HOME", env)
		if err != nil {
			return "", err
		}
		p = home + p[1:]
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q: use an absolute path (or start it with ~/)", p)
	}
	return filepath.Clean(p), nil
}

// XDGDir resolves HOME and the XDG base directories (XDG_CONFIG_HOME,
// XDG_STATE_HOME, ...) with their defaults under $HOME. An XDG variable set
// to a relative path is ignored, as the XDG spec says (and as Claude
// Desktop's config is found): its default holds.
func XDGDir(name string, env EnvFunc) (string, error) {
	if v, ok := env(name); ok && v != "" && (name == "HOME" || filepath.IsAbs(v)) {
		return v, nil
	}
	home, ok := env("HOME")
	if !ok || home == "" {
		return "", fmt.Errorf("$%s is not set and neither is $HOME", name)
	}
	switch name {
	case "HOME":
		return home, nil
	case "XDG_CONFIG_HOME":
		return filepath.Join(home, ".config"), nil
	case "XDG_STATE_HOME":
		return filepath.Join(home, ".local", "state"), nil
	case "XDG_DATA_HOME":
		return filepath.Join(home, ".local", "share"), nil
	case "XDG_CACHE_HOME":
		return filepath.Join(home, ".cache"), nil
	}
	return "", fmt.Errorf("$%s is not set", name)
}

// DefaultLedgerPath is the ledger when [ledger] path is not set:
// $XDG_STATE_HOME/mcp-guard/ledger.db.
func DefaultLedgerPath(env EnvFunc) (string, error) {
	dir, err := XDGDir("XDG_STATE_HOME", env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcp-guard", "ledger.db"), nil
}
