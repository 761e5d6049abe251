package config

import (
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/mcp-guard/mcp-guard/secrets"
)

// SecretsConfig is the [secrets] table.
type SecretsConfig struct {
	// RedactFound replaces well-known credential formats found in what
	// reaches the host ("[redacted: credential <rule>]"), besides giving
	// the session the label secret. Unset: true.
	RedactFound *bool `toml:"redact_found"`
}

// RedactFoundInForce is [secrets] redact_found (default true).
func (c *Config) RedactFoundInForce() bool {
	return c.Secrets.RedactFound == nil || *c.Secrets.RedactFound
}

// checkSecretEnv checks a command server's secret_env and public_env: valid
// names, each naming a variable the server gets (env or pass_env).
func checkSecretEnv(at string, s ServerConfig, add, warn func(string, ...any)) {
	for _, list := range []struct {
		key   string
		names []string
	}{{"secret_env", s.SecretEnv}, {"public_env", s.PublicEnv}} {
		for _, k := range list.names {
			if !envNameRE.MatchString(k) {
				add("%s.%s: %q is not a valid variable name", at, list.key, k)
				continue
			}
			if _, set := s.Env[k]; !set && !slices.Contains(s.PassEnv, k) {
				add("%s.%s: %s is neither set (env) nor passed (pass_env) to the server", at, list.key, k)
			}
		}
	}
}

// SecretEnvNames are the names of s's env and pass_env variables whose
// values are secrets (secrets.IsSecretName with secret_env and
// public_env), sorted.
func (s ServerConfig) SecretEnvNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range append(sortedKeys(s.Env), s.PassEnv...) {
		if !seen[k] && secrets.IsSecretName(k, s.SecretEnv, s.PublicEnv) {
			out = append(out, k)
		}
		seen[k] = true
	}
	sort.Strings(out)
	return out
}

// EnvSecrets are the secret values of s's env (known at check time): each
// variable SecretEnvNames names that env sets.
func (s ServerConfig) EnvSecrets() []secrets.Secret {
	var out []secrets.Secret
	for _, k := range s.SecretEnvNames() {
		if v, ok := s.Env[k]; ok {
			out = append(out, secrets.Secret{Server: s.Name, Name: k, Value: v})
		}
	}
	return out
}

// PassEnvSecrets are the secret values s's pass_env takes from mcp-guard's
// own environment now (known only at serve time); env wins over pass_env.
func (s ServerConfig) PassEnvSecrets(env EnvFunc) []secrets.Secret {
	var out []secrets.Secret
	for _, k := range s.SecretEnvNames() {
		if _, fixed := s.Env[k]; fixed || !slices.Contains(s.PassEnv, k) {
			continue
		}
		if v, ok := env(k); ok {
			out = append(out, secrets.Secret{Server: s.Name, Name: k, Value: v})
		}
	}
	return out
}

// HeaderSecrets are the credentials a url server is sent: every header
// value, and the bearer token itself (named Authorization).
func HeaderSecrets(server string, h http.Header) []secrets.Secret {
	var out []secrets.Secret
	for _, k := range sortedKeys(h) {
		for _, v := range h[k] {
			if tok, ok := strings.CutPrefix(v, "Bearer "); ok && k == "Authorization" {
				out = append(out, secrets.Secret{Server: server, Name: k, Value: tok})
				continue
			}
			out = append(out, secrets.Secret{Server: server, Name: k, Value: v})
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
