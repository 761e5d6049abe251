package main

import (
	"path/filepath"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
)

// configPath finds the config: --config, else $MCP_GUARD_CONFIG, else
// $XDG_CONFIG_HOME/mcp-guard/config.toml.
func configPath(flagValue string, env config.EnvFunc) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v, ok := env("MCP_GUARD_CONFIG"); ok && v != "" {
		return v, nil
	}
	dir, err := config.XDGDir("XDG_CONFIG_HOME", env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcp-guard", "config.toml"), nil
}

// newGate is the gate over the config's rules. Path rules on stdio servers,
// which open paths on this machine, also decide the path with its symbolic
// links followed (gate.LocalServers). What each server may ask of the host
// (allow_sampling, allow_elicitation, roots) is the gate's to decide too.
func newGate(cfg *config.Config) *gate.Gate {
	access := map[string]gate.ClientAccess{}
	for _, s := range cfg.Servers {
		access[s.Name] = gate.ClientAccess{Sampling: s.AllowSampling.Access, Elicitation: s.AllowElicitation.Access, Roots: s.Roots}
	}
	return gate.New(cfg.CompiledRules(), gate.LocalServers(cfg.LocalServers()...), gate.WithFlows(cfg.FlowsInForce()), gate.WithClientAccess(access))
}
