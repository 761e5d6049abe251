package main

import (
	"path/filepath"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/upstream"
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
// links followed (gate.LocalServers).
func newGate(cfg *config.Config) *gate.Gate {
	return gate.New(cfg.CompiledRules(), gate.LocalServers(cfg.LocalServers()...), gate.WithFlows(cfg.FlowsInForce()))
}

// proxyAccess is allow_sampling or allow_elicitation as the proxy takes it.
func proxyAccess(a config.Access) upstream.Access {
	switch a {
	case config.AccessAllow:
		return upstream.AccessAllow
	case config.AccessAsk:
		return upstream.AccessAsk
	}
	return upstream.AccessDeny
}
