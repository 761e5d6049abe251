package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// ErrSignInAgain says that a grant can no longer be refreshed (the
// refresh token was revoked, expired or never given): only a new sign-in
// helps.
var ErrSignInAgain = errors.New("the sign-in has ended")

// Refresh trades g's refresh token for a new access token at the token
// endpoint g was issued by, for the resource g is bound to (RFC 8707), and
// returns the renewed grant (with the new refresh token when the server
// rotates it). A refusal of the grant itself wraps ErrSignInAgain.
func Refresh(ctx context.Context, c *http.Client, g *Grant) (*Grant, error) {
	if g.RefreshToken == "" {
		return nil, fmt.Errorf("oauth: %s: the token expired and the server gave no refresh token: %w", g.Server, ErrSignInAgain)
	}
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {g.RefreshToken},
		"client_id":     {g.ClientID},
		"resource":      {g.Resource},
	}
	if g.ClientSecret != "" {
		form.Set("client_secret", g.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("oauth: %s: refresh: %w", g.Server, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: %s: refresh at %s: %w", g.Server, showRaw(g.TokenURL), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("oauth: %s: refresh at %s: %w", g.Server, showRaw(g.TokenURL), err)
	}
	var tr struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" || json.Unmarshal(body, &tr) != nil {
		return nil, fmt.Errorf("oauth: %s: refresh at %s: HTTP %d, not a JSON token answer", g.Server, showRaw(g.TokenURL), resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK || tr.Error != "" {
		err := fmt.Errorf("oauth: %s: refresh refused (HTTP %d, %s %s)", g.Server, resp.StatusCode, safetext.Show(tr.Error, 100), safetext.Show(tr.Description, 200))
		if tr.Error == "invalid_grant" || tr.Error == "unauthorized_client" || tr.Error == "invalid_client" {
			err = fmt.Errorf("%w: %w", err, ErrSignInAgain)
		}
		return nil, err
	}
	if tr.AccessToken == "" || !strings.EqualFold(tr.TokenType, "bearer") {
		return nil, fmt.Errorf("oauth: %s: refresh at %s gave no bearer token", g.Server, showRaw(g.TokenURL))
	}
	n := *g
	n.AccessToken = tr.AccessToken
	if tr.RefreshToken != "" {
		n.RefreshToken = tr.RefreshToken
	}
	n.Expiry = time.Time{}
	if tr.ExpiresIn > 0 {
		n.Expiry = time.Now().Add(time.Duration(tr.ExpiresIn) * time.Second).UTC()
	}
	if tr.Scope != "" {
		n.Scopes = strings.Fields(tr.Scope)
	}
	return &n, nil
}

// showRaw is a URL as it may be shown (ShowURL), from its text.
func showRaw(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(not a URL)"
	}
	return ShowURL(u)
}
