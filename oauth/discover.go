package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Discovery is what a server says about signing in to it.
type Discovery struct {
	Resource string   // the server URL, as its protected-resource metadata names it
	Scopes   []string // asked for by its challenge, else those its metadata lists
	AS       *oauthex.AuthServerMeta

	// Why the user is asked (SignIn.Confirm): the authorization server is
	// on another origin than the server, or is not the one pinned for it.
	OtherOrigin bool
	Pinned      string // the issuer pinned at an earlier sign-in, when it differs
}

// ErrNoSignIn says that a server answered without asking for a token.
var ErrNoSignIn = errors.New("the server does not ask for sign-in (it answered without a token)")

// Discover asks the server at resource how to sign in to it: an MCP
// request without a token must be refused with 401, whose challenge (or
// else the well-known address) leads to its protected-resource metadata
// (RFC 9728), which names its authorization server, whose metadata (RFC
// 8414, else OpenID discovery) must offer PKCE with S256. c must not follow
// redirects.
func Discover(ctx context.Context, c *http.Client, resource string) (*Discovery, error) {
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("oauth: server url: %w", err)
	}
	prmURL, scope, err := challenge(ctx, c, resource)
	if err != nil {
		return nil, err
	}
	candidates := []string{prmURL}
	if prmURL == "" {
		candidates = prmCandidates(ru)
	}
	var prm *oauthex.ProtectedResourceMetadata
	var errs []error
	for _, u := range candidates {
		prm, err = oauthex.GetProtectedResourceMetadata(ctx, u, resource, c)
		if err == nil {
			break
		}
		errs = append(errs, err)
	}
	if prm == nil {
		return nil, fmt.Errorf("oauth: no protected-resource metadata for %s: %w", ShowURL(ru), errors.Join(errs...))
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("oauth: the protected-resource metadata of %s names no authorization server", ShowURL(ru))
	}
	issuer := prm.AuthorizationServers[0]
	as, err := authServerMeta(ctx, c, issuer)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("oauth: the authorization server %s does not offer PKCE with S256, which sign-in requires", issuer)
	}
	d := &Discovery{Resource: prm.Resource, AS: as}
	switch {
	case scope != "":
		d.Scopes = strings.Fields(scope)
	default:
		d.Scopes = prm.ScopesSupported
	}
	return d, nil
}

// challenge sends an initialize without a token and reads the 401's
// Bearer challenge: its resource_metadata URL ("" when it gives none) and
// scope.
func challenge(ctx context.Context, c *http.Client, resource string) (prmURL, scope string, err error) {
	body := []byte(`{"jsonrpc":"2.0","id":"mcp-guard-auth","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-guard","version":"auth"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, bytes.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("oauth: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("oauth: asking the server how to sign in: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		if resp.StatusCode/100 == 2 {
			return "", "", ErrNoSignIn
		}
		return "", "", fmt.Errorf("oauth: the server answered HTTP %d, not 401 with a sign-in challenge", resp.StatusCode)
	}
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return "", "", fmt.Errorf("oauth: the server's WWW-Authenticate: %w", err)
	}
	for _, ch := range chs {
		if strings.EqualFold(ch.Scheme, "bearer") {
			return ch.Params["resource_metadata"], ch.Params["scope"], nil
		}
	}
	return "", "", nil
}

// prmCandidates are the well-known addresses of u's protected-resource
// metadata (RFC 9728 §3.1): under its path first, then at the root.
func prmCandidates(u *url.URL) []string {
	base := url.URL{Scheme: u.Scheme, Host: u.Host}
	var out []string
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		out = append(out, base.JoinPath("/.well-known/oauth-protected-resource", p).String())
	}
	return append(out, base.JoinPath("/.well-known/oauth-protected-resource").String())
}

// authServerMeta reads the metadata of the authorization server issuer:
// RFC 8414 first, then OpenID discovery, each at the addresses the MCP
// authorization spec lists for an issuer with or without a path. The
// metadata's issuer must be the one asked for.
func authServerMeta(ctx context.Context, c *http.Client, issuer string) (*oauthex.AuthServerMeta, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		return nil, fmt.Errorf("oauth: authorization server %q is not a URL", issuer)
	}
	base := url.URL{Scheme: iu.Scheme, Host: iu.Host}
	p := strings.TrimSuffix(iu.Path, "/")
	var candidates []string
	if p == "" {
		candidates = []string{
			base.JoinPath("/.well-known/oauth-authorization-server").String(),
			base.JoinPath("/.well-known/openid-configuration").String(),
		}
	} else {
		candidates = []string{
			base.JoinPath("/.well-known/oauth-authorization-server", p).String(),
			base.JoinPath("/.well-known/openid-configuration", p).String(),
			base.JoinPath(p, "/.well-known/openid-configuration").String(),
		}
	}
	var errs []error
	for _, u := range candidates {
		as, err := oauthex.GetAuthServerMeta(ctx, u, issuer, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if as != nil {
			return as, nil
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("oauth: authorization server %s: %w", issuer, errors.Join(errs...))
	}
	return nil, fmt.Errorf("oauth: authorization server %s publishes no metadata (RFC 8414 or OpenID discovery)", issuer)
}

// ShowURL is u without user, query or fragment: what may be shown of an
// address.
func ShowURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
