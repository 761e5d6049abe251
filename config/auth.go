package config

import (
	"net/http"
	"net/url"
	"strings"
)

// AuthConfig is the [auth] table: where the OAuth tokens mcp-guard holds
// for url servers are kept.
type AuthConfig struct {
	// Store is "file" (the default: mcp-guard's state directory, owner
	// only) or "keyring" (the desktop's Secret Service, or the macOS
	// Keychain).
	Store string `toml:"store"`
}

// StoreInForce is [auth] store, defaulted.
func (a AuthConfig) StoreInForce() string {
	if a.Store == "" {
		return "file"
	}
	return a.Store
}

// OAuthConfig is a url server's oauth = {...}: mcp-guard signs in to the
// server per the MCP authorization spec (mcp-guard auth NAME) and sends
// the token it was given, refreshed, to that server alone.
type OAuthConfig struct {
	// ClientID is a client registered with the authorization server
	// beforehand; without one, mcp-guard registers itself (a Client ID
	// Metadata Document when ClientMetadataURL is set and the server takes
	// one, else Dynamic Client Registration).
	ClientID string `toml:"client_id"`
	// ClientSecretEnv names the variable holding ClientID's secret, for a
	// client registered as confidential.
	ClientSecretEnv string `toml:"client_secret_env"`
	// Scopes asked for; none: what the server's challenge or metadata name.
	Scopes []string `toml:"scopes"`
	// ClientMetadataURL is an https URL where mcp-guard's client metadata
	// document is published, used as its client_id where the
	// authorization server supports Client ID Metadata Documents.
	ClientMetadataURL string `toml:"client_metadata_url"`
}

// checkAuth checks [auth].
func checkAuth(a AuthConfig, add func(string, ...any)) {
	switch a.Store {
	case "", "file", "keyring":
	default:
		add("auth.store: %q: want \"file\" (mcp-guard's state directory) or \"keyring\" (the desktop's secret store)", a.Store)
	}
}

// checkOAuth checks a url server's oauth table. It names keys, never values
// of secrets.
func checkOAuth(at string, s *ServerConfig, add func(string, ...any)) {
	o := s.OAuth
	if o == nil {
		return
	}
	if s.TokenEnv != "" || s.TokenFile != "" {
		add("%s.oauth: the server signs in with OAuth (mcp-guard auth %s) or is given a token (token_env, token_file), not both", at, s.Name)
	}
	for k := range s.Headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			add("%s.headers: Authorization conflicts with oauth, which sends it", at)
		}
	}
	if strings.ContainsAny(o.ClientID, " \t\r\n\x00") {
		add("%s.oauth.client_id: has white space or a control character in it", at)
	}
	if o.ClientSecretEnv != "" {
		if o.ClientID == "" {
			add("%s.oauth.client_secret_env: a client secret needs the client_id it belongs to", at)
		}
		if !envNameRE.MatchString(o.ClientSecretEnv) {
			add("%s.oauth.client_secret_env: %q is not a valid variable name", at, o.ClientSecretEnv)
		}
	}
	for _, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"\\") {
			add("%s.oauth.scopes: %q: a scope is one word, without spaces or quotes", at, sc)
		}
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.User != nil || u.Fragment != "" {
			add("%s.oauth.client_metadata_url: %q: want an https URL with a path, where mcp-guard's client metadata document is published", at, o.ClientMetadataURL)
		}
	}
}
