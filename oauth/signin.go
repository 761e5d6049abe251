package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// SignIn is one sign-in to a server: what mcp-guard auth SERVER runs.
type SignIn struct {
	Server   string       // the [[server]] name
	Resource string       // its url, which the token is bound to
	Client   *http.Client // for every request of the sign-in; must not follow redirects

	ClientID          string   // registered beforehand (oauth.client_id), or ""
	ClientSecret      string   // its secret, when it has one
	ClientMetadataURL string   // where mcp-guard's client metadata document is published, or ""
	Scopes            []string // asked for; none: what the server names

	// Pinned is the issuer pinned for the server at its first sign-in
	// ("" when none): another one must be confirmed.
	Pinned string
	// Confirm is asked, with what was discovered, before anything is sent
	// to an authorization server on another origin than the server's, or
	// other than the one pinned; a nil Confirm refuses such a server.
	Confirm func(d *Discovery) (bool, error)
	// Open is given the address to sign in at: it opens a browser, or
	// prints it for the user.
	Open func(authURL string) error
}

// Run signs in: it discovers the authorization server, registers when it
// must, waits for the browser to come back to a loopback address with the
// code (its state checked, and its issuer where the server gives one), and
// exchanges the code, with the PKCE verifier and the resource, for the
// Grant. ctx bounds the whole sign-in, the user's part included.
func (s *SignIn) Run(ctx context.Context) (*Grant, error) {
	d, err := Discover(ctx, s.Client, s.Resource)
	if err != nil {
		return nil, err
	}
	d.OtherOrigin = !sameOrigin(d.AS.Issuer, s.Resource)
	if s.Pinned != "" && s.Pinned != d.AS.Issuer {
		d.Pinned = s.Pinned
	}
	if d.OtherOrigin || d.Pinned != "" {
		ok := false
		if s.Confirm != nil {
			if ok, err = s.Confirm(d); err != nil {
				return nil, err
			}
		}
		if !ok {
			why := "another origin than the server's"
			if d.Pinned != "" {
				why = "not the authorization server pinned for it (" + d.Pinned + ")"
			}
			return nil, fmt.Errorf("oauth: not signed in: the sign-in at %s, %s, was not confirmed", d.AS.Issuer, why)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauth: a loopback address for the browser to come back to: %w", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	clientID, clientSecret, err := s.register(ctx, d, redirect)
	if err != nil {
		return nil, err
	}
	scopes := s.Scopes
	if len(scopes) == 0 {
		scopes = d.Scopes
	}
	conf := &oauth2.Config{
		ClientID: clientID, ClientSecret: clientSecret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: d.AS.AuthorizationEndpoint, TokenURL: d.AS.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}
	state := random()
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", s.Resource))
	code, err := s.await(ctx, ln, d.AS, state, authURL)
	if err != nil {
		return nil, err
	}
	xctx := context.WithValue(ctx, oauth2.HTTPClient, s.Client)
	tok, err := conf.Exchange(xctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", s.Resource))
	if err != nil {
		return nil, fmt.Errorf("oauth: exchanging the code for a token at %s: %w", d.AS.TokenEndpoint, tokenError(err))
	}
	g := &Grant{
		Server: s.Server, Resource: s.Resource, Issuer: d.AS.Issuer, TokenURL: d.AS.TokenEndpoint,
		ClientID: clientID, ClientSecret: clientSecret, AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken,
		Expiry: tok.Expiry, Scopes: scopes, SignedIn: time.Now().UTC(),
	}
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("oauth: the token endpoint's answer: %w", err)
	}
	return g, nil
}

// register gives the client_id (and secret) to sign in with: the one
// configured, else mcp-guard's client metadata document where the server
// takes one, else a Dynamic Client Registration for this redirect.
func (s *SignIn) register(ctx context.Context, d *Discovery, redirect string) (id, secret string, err error) {
	switch {
	case s.ClientID != "":
		return s.ClientID, s.ClientSecret, nil
	case s.ClientMetadataURL != "" && d.AS.ClientIDMetadataDocumentSupported:
		return s.ClientMetadataURL, "", nil
	case d.AS.RegistrationEndpoint != "":
		r, err := oauthex.RegisterClient(ctx, d.AS.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			ClientName: "mcp-guard", ApplicationType: "native",
		}, s.Client)
		if err != nil {
			return "", "", fmt.Errorf("oauth: registering mcp-guard at %s: %w", d.AS.RegistrationEndpoint, err)
		}
		return r.ClientID, r.ClientSecret, nil
	}
	return "", "", fmt.Errorf("oauth: the authorization server %s takes no registration from mcp-guard (no registration endpoint%s); register a client there and set oauth.client_id",
		d.AS.Issuer, map[bool]string{true: ", and oauth.client_metadata_url is not set", false: ""}[d.AS.ClientIDMetadataDocumentSupported])
}

// await serves the loopback redirect until the browser comes back with
// the code for state, gives the user authURL, and returns the code.
func (s *SignIn) await(ctx context.Context, ln net.Listener, as *oauthex.AuthServerMeta, state, authURL string) (string, error) {
	got := make(chan authResult, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		res := callback(r.URL.Query(), as, state)
		if res.err != nil {
			http.Error(w, "mcp-guard: sign-in failed: "+res.err.Error(), http.StatusBadRequest)
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "mcp-guard: signed in. You can close this window.")
		}
		http.NewResponseController(w).Flush()
		select {
		case got <- res:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		// The browser's request is answered before the server goes.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	if err := s.Open(authURL); err != nil {
		return "", err
	}
	select {
	case r := <-got:
		return r.code, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("oauth: not signed in: the browser did not come back in time (%w)", ctx.Err())
	}
}

// authResult is what the browser brought back: the code, or why not.
type authResult struct {
	code string
	err  error
}

// callback reads the authorization response: the state must be ours, the
// issuer (RFC 9207) the authorization server's when it gives one or says
// it will.
func callback(q url.Values, as *oauthex.AuthServerMeta, state string) authResult {
	type r = authResult
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
		return r{err: errors.New("the answer's state is not this sign-in's (another sign-in, or a forged redirect)")}
	}
	iss, hasIss := q["iss"]
	switch {
	case hasIss && (len(iss) != 1 || iss[0] != as.Issuer):
		return r{err: fmt.Errorf("the answer comes from issuer %q, not %q", q.Get("iss"), as.Issuer)}
	case !hasIss && as.AuthorizationResponseIssParameterSupported:
		return r{err: errors.New("the answer has no issuer, which this authorization server says it sends")}
	}
	if e := q.Get("error"); e != "" {
		return r{err: fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))}
	}
	if q.Get("code") == "" {
		return r{err: errors.New("the answer has no code")}
	}
	return r{code: q.Get("code")}
}

// sameOrigin reports whether a and b have one scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// random is 32 random bytes, base64url.
func random() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenError is err without the response body x/oauth2 puts in it (it
// may echo what was sent).
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("%s %s (HTTP %d)", re.ErrorCode, re.ErrorDescription, re.Response.StatusCode)
		}
		return fmt.Errorf("HTTP %d", re.Response.StatusCode)
	}
	return err
}
