package main

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/oauth"
	"github.com/mcp-guard/mcp-guard/secrets"
)

// knownSecrets are the credentials mcp-guard passes to cfg's upstreams:
// each env value secrets.IsSecretName picks, with pass_env's taken from
// env when serving (pass is true), and each url server's header values
// and token. A url server whose token cannot be read now is left out: it
// cannot be connected either.
func knownSecrets(cfg *config.Config, env config.EnvFunc, pass bool) []secrets.Secret {
	var list []secrets.Secret
	for _, s := range cfg.Servers {
		if s.URL != "" {
			if h, err := s.UpstreamHeader(env)(); err == nil {
				list = append(list, config.HeaderSecrets(s.Name, h)...)
			}
			continue
		}
		list = append(list, s.EnvSecrets()...)
		if pass {
			list = append(list, s.PassEnvSecrets(env)...)
		}
	}
	return list
}

// newRedactor is serve's redactor: every known secret, and the
// found-credential rules ([secrets] redact_found). A value too short to
// redact is warned of by name, never by value.
func newRedactor(cfg *config.Config, env config.EnvFunc, log *slog.Logger) *secrets.Redactor {
	return newSignInSecrets(cfg, env, log).r
}

// signInSecrets keeps serve's redactor knowing, besides the config's
// secrets, every token of a sign-in (package oauth) that this process has
// held: each one its oauth.Source takes up (Taken), before it is sent, so
// a token is redacted from what the host receives and refused in
// arguments from the moment a server could leak it.
type signInSecrets struct {
	r *secrets.Redactor

	mu     sync.Mutex
	known  []secrets.Secret
	tokens map[string]bool
}

// newSignInSecrets is newRedactor's redactor, ready to learn sign-ins.
func newSignInSecrets(cfg *config.Config, env config.EnvFunc, log *slog.Logger) *signInSecrets {
	list := knownSecrets(cfg, env, true)
	known, short := secrets.NewKnown(list)
	for _, s := range short {
		log.Warn(fmt.Sprintf("server %s: %s is shorter than %d bytes, so it is not treated as a secret (not redacted, not refused in arguments)", s.Server, s.Name, secrets.MinLen))
	}
	return &signInSecrets{r: secrets.NewRedactor(known, secrets.Options{Found: true, RedactFound: cfg.RedactFoundInForce()}),
		known: list, tokens: map[string]bool{}}
}

// add makes g's token, refresh token and client secret known secrets.
func (s *signInSecrets) add(g *oauth.Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range []struct{ name, value string }{
		{"sign-in token", g.AccessToken}, {"sign-in refresh token", g.RefreshToken}, {"sign-in client secret", g.ClientSecret},
	} {
		if v.value == "" || s.tokens[v.value] {
			continue
		}
		s.tokens[v.value] = true
		s.known = append(s.known, secrets.Secret{Server: g.Server, Name: v.name, Value: v.value})
		changed = true
	}
	if changed {
		k, _ := secrets.NewKnown(s.known)
		s.r.SetKnown(k)
	}
}

// printSecrets is check's account of which names are treated as secrets,
// and which are too short to be (env and headers: pass_env values are
// known only when serve starts).
func printSecrets(w io.Writer, cfg *config.Config, env config.EnvFunc) {
	_, short := secrets.NewKnown(knownSecrets(cfg, env, false))
	for _, s := range short {
		fmt.Fprintf(w, "warning: server %s: %s is shorter than %d bytes, so it is not treated as a secret\n", s.Server, s.Name, secrets.MinLen)
	}
	for _, s := range cfg.Servers {
		var names []string
		if s.URL != "" {
			for k := range s.Headers {
				names = append(names, "header "+k)
			}
			if s.TokenEnv != "" || s.TokenFile != "" {
				names = append(names, "the token")
			}
		} else {
			names = s.SecretEnvNames()
		}
		slices.Sort(names)
		if len(names) > 0 {
			fmt.Fprintf(w, "secrets: server %s: %s (redacted from what the host receives, refused in arguments)\n", s.Name, strings.Join(names, ", "))
		}
	}
}
