package oauth

import (
	"errors"
	"time"
)

// Grant is what a sign-in to one server gave mcp-guard: the token and
// what it is bound to. Its secrets (AccessToken, RefreshToken,
// ClientSecret) are never printed, logged or recorded.
type Grant struct {
	Server   string `json:"server"`   // the [[server]] name
	Resource string `json:"resource"` // the server URL the token was issued for (RFC 8707)
	Issuer   string `json:"issuer"`   // the authorization server's issuer at sign-in
	TokenURL string `json:"token_url"`

	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`

	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
	SignedIn     time.Time `json:"signed_in"`
}

// check reports what makes g unusable.
func (g *Grant) check() error {
	switch {
	case g.Server == "":
		return errors.New("no server name")
	case g.Resource == "" || g.Issuer == "" || g.TokenURL == "" || g.ClientID == "":
		return errors.New("resource, issuer, token endpoint and client ID are required")
	case g.AccessToken == "":
		return errors.New("no access token")
	}
	return nil
}

// ErrNoGrant says that no sign-in is stored for a server.
var ErrNoGrant = errors.New("not signed in")

// Store keeps one Grant per server name.
type Store interface {
	// Load returns the server's Grant, or an error wrapping ErrNoGrant.
	Load(server string) (*Grant, error)
	// Save stores g under g.Server, replacing what was there.
	Save(g *Grant) error
	// Delete removes the server's Grant; none is not an error.
	Delete(server string) error
	// List names the servers with a Grant, sorted.
	List() ([]string, error)
	// String says where the store is, for messages.
	String() string
}
