// Package oauth signs mcp-guard in to url servers that require it, per the
// MCP authorization spec (OAuth 2.1): it finds the server's authorization
// server (RFC 9728 protected-resource metadata, RFC 8414 or OpenID
// discovery), registers mcp-guard with it (a Client ID Metadata Document,
// Dynamic Client Registration, or a client the operator registered),
// runs the authorization code flow with PKCE and the resource parameter
// (RFC 8707) through a loopback redirect, refreshes the token, and keeps
// the Grant in a Store (a file only its owner can read, or the desktop's
// keyring). A Grant is bound to the server URL it was issued for and to
// the authorization server's issuer: its token is sent nowhere else.
//
// The protocol pieces are golang.org/x/oauth2 (the code exchange, PKCE,
// refresh) and the MCP go-sdk's oauthex (metadata discovery, the
// WWW-Authenticate challenge, registration).
package oauth
