package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Source gives serve the access token for one server, renewing it before
// it expires and when the server refuses it. It reads the Grant from the
// Store, and writes a renewed one back, so every mcp-guard process on the
// store shares one sign-in.
type Source struct {
	Store    Store
	Server   string       // the [[server]] name
	Resource string       // its url: the grant must have been issued for it
	Client   *http.Client // for the token endpoint; must not follow redirects
	// Early is how long before its expiry a token is renewed [1m].
	Early time.Duration
	// Check, when set, refuses a grant the Source must not use: serve's
	// refuses one whose issuer is not the one pinned for the server.
	Check func(g *Grant) error
	// Taken, when set, is told of each grant the Source takes up (read
	// from the store, renewed here or by another process) before its token
	// is sent: serve redacts the token from then on.
	Taken func(g *Grant)

	mu sync.Mutex
	g  *Grant
}

// Token is the access token to send now.
func (s *Source) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.g == nil {
		if err := s.load(); err != nil {
			return "", err
		}
	}
	if s.expiring(s.g) {
		if err := s.renew(ctx); err != nil {
			return "", err
		}
	}
	return s.g.AccessToken, nil
}

// Refused is told that the server refused token (HTTP 401): the token is
// renewed, unless it already was, and the next Token gives the new one.
func (s *Source) Refused(ctx context.Context, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.g == nil {
		if err := s.load(); err != nil {
			return err
		}
	}
	if s.g.AccessToken != token {
		return nil // renewed since
	}
	return s.renew(ctx)
}

// load reads the grant and checks it is for this server's url.
func (s *Source) load() error {
	g, err := s.Store.Load(s.Server)
	if errors.Is(err, ErrNoGrant) {
		return fmt.Errorf("server %q needs sign-in: run `mcp-guard auth %s`", s.Server, s.Server)
	}
	if err != nil {
		return err
	}
	if g.Resource != s.Resource {
		return fmt.Errorf("server %q was signed in at %s, not its url %s: run `mcp-guard auth %s`", s.Server, showRaw(g.Resource), showRaw(s.Resource), s.Server)
	}
	if s.Check != nil {
		if err := s.Check(g); err != nil {
			return err
		}
	}
	s.g = g
	s.taken()
	return nil
}

func (s *Source) expiring(g *Grant) bool {
	early := s.Early
	if early <= 0 {
		early = time.Minute
	}
	return !g.Expiry.IsZero() && time.Until(g.Expiry) < early
}

// renew replaces the grant with a fresher one: another process's, when it
// renewed it already, else a refresh, saved for the others.
func (s *Source) renew(ctx context.Context) error {
	had := s.g.AccessToken
	if err := s.load(); err != nil {
		return err
	}
	if s.g.AccessToken != had && !s.expiring(s.g) {
		return nil
	}
	n, err := Refresh(ctx, s.Client, s.g)
	if errors.Is(err, ErrSignInAgain) {
		// Another process may have used the refresh token first.
		if lerr := s.load(); lerr == nil && s.g.AccessToken != had && !s.expiring(s.g) {
			return nil
		}
		return fmt.Errorf("%w; run `mcp-guard auth %s`", err, s.Server)
	}
	if err != nil {
		return err
	}
	s.g = n
	s.taken()
	if err := s.Store.Save(n); err != nil {
		return fmt.Errorf("oauth: %s: the renewed token could not be kept: %w", s.Server, err)
	}
	return nil
}

func (s *Source) taken() {
	if s.Taken != nil {
		s.Taken(s.g)
	}
}
