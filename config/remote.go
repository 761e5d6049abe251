package config

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// headerNameRE is an HTTP header name (RFC 9110 token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// reservedHeaders are set by mcp-guard itself on every upstream request.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Accept": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Mcp-Method": true, "Mcp-Name": true, "Connection": true,
	"Transfer-Encoding": true, "Last-Event-Id": true,
}

// checkRemote validates an HTTP upstream's url and credentials. Nothing it
// reports ever includes a credential's value.
func checkRemote(at string, s *ServerConfig, env EnvFunc, add, warn func(string, ...any)) {
	if len(s.Command) > 0 {
		add("%s: give either command (a local server) or url (a remote one), not both", at)
	}
	if len(s.Env) > 0 || len(s.PassEnv) > 0 || s.Cwd != "" || len(s.SecretEnv) > 0 || len(s.PublicEnv) > 0 {
		add("%s: env, pass_env, secret_env, public_env and cwd are for servers mcp-guard starts (command); a url server gets none (its headers and token are always secrets)", at)
	}
	u, err := url.Parse(s.URL)
	switch {
	case err != nil:
		add("%s.url: not a URL: %v", at, err)
		return
	case u.Scheme != "https" && u.Scheme != "http":
		add("%s.url: %q: want an https:// URL (or http:// to this machine)", at, showURL(u))
		return
	case u.Host == "":
		add("%s.url: no host", at)
		return
	case u.User != nil:
		add("%s.url: has a user or password in it; put credentials in token_env, token_file or headers, which are never shown", at)
		return
	case u.Fragment != "":
		add("%s.url: has a #fragment, which HTTP never sends; remove it", at)
	}
	creds := s.TokenEnv != "" || s.TokenFile != "" || len(s.Headers) > 0 || s.OAuth != nil
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		if creds {
			add("%s.url: %s is plain http:// to another machine, so the credential would travel unencrypted; use https://", at, showURL(u))
		} else {
			warn("%s.url: %s is plain http:// to another machine: anyone on the path can read and change what it sends; use https://", at, showURL(u))
		}
	}
	if s.TokenEnv != "" && s.TokenFile != "" {
		add("%s: give token_env or token_file, not both", at)
	}
	if s.TokenEnv != "" && !envNameRE.MatchString(s.TokenEnv) {
		add("%s.token_env: %q is not a valid variable name", at, s.TokenEnv)
	}
	if s.TokenFile != "" {
		p, err := ExpandPath(s.TokenFile, env)
		if err != nil {
			add("%s.token_file: %v", at, err)
		}
		s.TokenFile = p
	}
	for k, v := range s.Headers {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case !headerNameRE.MatchString(k):
			add("%s.headers: %q is not a valid header name", at, k)
		case reservedHeaders[ck] || strings.HasPrefix(ck, "Mcp-Param-"):
			add("%s.headers: %s is set by mcp-guard itself", at, ck)
		case ck == "Authorization" && (s.TokenEnv != "" || s.TokenFile != ""):
			add("%s.headers: Authorization conflicts with token_env/token_file, which send it", at)
		case strings.ContainsAny(v, "\r\n\x00"):
			add("%s.headers: the value of %s has a line break or NUL (value not shown)", at, ck)
		}
	}
}

// CheckRemote checks a url server's url and credentials as Parse does and
// returns what it refuses, each named by its key ("url: ...", "headers:
// ..."), never with a credential's value; it expands s.TokenFile.
func CheckRemote(s *ServerConfig, env EnvFunc) []string {
	var problems []string
	checkRemote("", s, env, func(format string, a ...any) {
		problems = append(problems, strings.TrimPrefix(fmt.Sprintf(format, a...), "."))
	}, func(string, ...any) {})
	return problems
}

// showURL is u without user, query or fragment: what may be printed of a
// url server's address.
func showURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// checkLocalOnly refuses the remote-only keys on a command server.
func checkLocalOnly(at string, s ServerConfig, add func(string, ...any)) {
	if s.TokenEnv != "" || s.TokenFile != "" || len(s.Headers) > 0 {
		add("%s: token_env, token_file and headers are for url servers; give a command server its secrets in env", at)
	}
	if s.OAuth != nil {
		add("%s.oauth: sign-in is for url servers; a command server gets its credentials in env", at)
	}
}

// loopbackHost reports whether host names this machine: "localhost" or a
// loopback IP literal.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// UpstreamHeader returns the function to call at each connect to get a url
// server's headers. The token is read then, from mcp-guard's own
// environment or the token file, so a rotated file is picked up; a missing
// one fails that server's connect with the reason, never with the value.
func (s ServerConfig) UpstreamHeader(env EnvFunc) func() (http.Header, error) {
	return func() (http.Header, error) {
		h := http.Header{}
		for k, v := range s.Headers {
			h.Set(k, v)
		}
		var token string
		switch {
		case s.TokenEnv != "":
			v, ok := env(s.TokenEnv)
			if !ok || strings.TrimSpace(v) == "" {
				return nil, fmt.Errorf("token_env: $%s is not set in mcp-guard's environment (the host starts mcp-guard: set it in the host's config for mcp-guard)", s.TokenEnv)
			}
			token = strings.TrimSpace(v)
		case s.TokenFile != "":
			fi, err := os.Stat(s.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("token_file: %w", err)
			}
			if fi.Mode().Perm()&0o077 != 0 {
				return nil, fmt.Errorf("token_file: %s can be read by other users (mode %04o); chmod 600 it", s.TokenFile, fi.Mode().Perm())
			}
			if fi.Size() > 64<<10 {
				return nil, fmt.Errorf("token_file: %s is over 64 KiB; it should hold one token", s.TokenFile)
			}
			b, err := os.ReadFile(s.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("token_file: %w", err)
			}
			token = strings.TrimSpace(string(b))
			if token == "" {
				return nil, fmt.Errorf("token_file: %s is empty", s.TokenFile)
			}
		}
		if token != "" {
			if strings.ContainsAny(token, "\r\n\x00") {
				return nil, fmt.Errorf("the token has a line break or NUL in it (not shown)")
			}
			h.Set("Authorization", "Bearer "+token)
		}
		return h, nil
	}
}
