package config

import "sort"

// ChildEnv is the environment of a stdio server's process: exactly the
// server's env plus the pass_env names that are set in mcp-guard's own
// environment (env); nothing else reaches the child. Never nil.
func (s ServerConfig) ChildEnv(env EnvFunc) []string {
	out := []string{}
	set := map[string]bool{}
	for _, k := range s.PassEnv {
		if _, fixed := s.Env[k]; fixed {
			continue // env wins over pass_env
		}
		if v, ok := env(k); ok && !set[k] {
			out = append(out, k+"="+v)
			set[k] = true
		}
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+s.Env[k])
	}
	return out
}
