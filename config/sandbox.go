package config

import (
	"fmt"
	"sort"

	"github.com/mcp-guard/mcp-guard/sandbox"
)

// SandboxConfig is a stdio server's [server.sandbox]: what its process may
// read, write and reach on the network (sandbox enforces it).
type SandboxConfig struct {
	Read       []string      `toml:"read"`
	Write      []string      `toml:"write"`
	Network    NetworkConfig `toml:"network"`
	BestEffort bool          `toml:"best_effort"`
}

// NetworkConfig is sandbox.network: "none" (the default), "all", or a
// table { connect = [PORTS], bind = [PORTS], udp = BOOL }.
type NetworkConfig struct {
	sandbox.Network
	bad []string // problems found while decoding, reported located by Parse
}

// UnmarshalTOML reads the string or table form.
func (n *NetworkConfig) UnmarshalTOML(v any) error {
	switch t := v.(type) {
	case string:
		switch t {
		case sandbox.NetNone, sandbox.NetAll:
			n.Mode = t
		default:
			n.bad = append(n.bad, fmt.Sprintf("%q: want \"none\", \"all\" or { connect = [443], bind = [], udp = false }", t))
		}
	case map[string]any:
		n.Mode = sandbox.NetPorts
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch k {
			case "connect":
				n.Connect = n.ports(k, t[k])
			case "bind":
				n.Bind = n.ports(k, t[k])
			case "udp":
				b, ok := t[k].(bool)
				if !ok {
					n.bad = append(n.bad, "udp: want true or false")
				}
				n.UDP = b
			default:
				n.bad = append(n.bad, k+": unknown key")
			}
		}
	default:
		n.bad = append(n.bad, "want \"none\", \"all\" or { connect = [443], bind = [], udp = false }")
	}
	return nil
}

func (n *NetworkConfig) ports(key string, v any) []uint16 {
	list, ok := v.([]any)
	if !ok {
		n.bad = append(n.bad, key+": want a list of port numbers")
		return nil
	}
	var out []uint16
	for _, x := range list {
		p, ok := x.(int64)
		if !ok || p < 1 || p > 65535 {
			n.bad = append(n.bad, fmt.Sprintf("%s: %v is not a port number (1-65535)", key, x))
			continue
		}
		out = append(out, uint16(p))
	}
	return out
}

// checkSandbox validates and expands s.Sandbox: paths absolute (~, $HOME,
// $XDG_* expanded), network as documented.
func checkSandbox(at string, s *ServerConfig, env EnvFunc, add func(string, ...any)) {
	sb := s.Sandbox
	if sb == nil {
		return
	}
	if s.URL != "" {
		add("%s.sandbox: a sandbox confines a process mcp-guard starts (command); a url server runs elsewhere", at)
		return
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"read", sb.Read}, {"write", sb.Write}} {
		for i, p := range list.paths {
			x, err := ExpandPath(p, env)
			if err != nil {
				add("%s.sandbox.%s: %v", at, list.name, err)
				continue
			}
			if x == "/" {
				add("%s.sandbox.%s: \"/\" is the whole filesystem: name the directories the server needs", at, list.name)
			}
			list.paths[i] = x
		}
	}
	for _, b := range sb.Network.bad {
		add("%s.sandbox.network: %s", at, b)
	}
	if sb.Network.Mode == "" {
		sb.Network.Mode = sandbox.NetNone
	}
}

// SandboxPolicy is the server's sandbox as configured (before the runtime
// defaults), or nil when it has none.
func (s ServerConfig) SandboxPolicy() *sandbox.Policy {
	if s.Sandbox == nil {
		return nil
	}
	n := s.Sandbox.Network.Network
	if n.Mode == "" {
		n.Mode = sandbox.NetNone
	}
	return &sandbox.Policy{Read: s.Sandbox.Read, Write: s.Sandbox.Write, Network: n, BestEffort: s.Sandbox.BestEffort}
}
