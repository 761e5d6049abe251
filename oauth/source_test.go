package oauth

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signedIn signs in to a and keeps the grant in a new FileStore.
func signedIn(t *testing.T, a *authServer) (FileStore, *Grant) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g, err := signIn(a, browser(t, nil), yes).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := FileStore{Dir: filepath.Join(t.TempDir(), "auth")}
	if err := st.Save(g); err != nil {
		t.Fatal(err)
	}
	return st, g
}

func post(t *testing.T, a *authServer, path string) {
	t.Helper()
	resp, err := http.Post(a.as+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// A token the server refuses is renewed with the refresh token, once, for
// this server; the renewed grant is kept for every process on the store.
func TestSource_RenewsARefusedToken(t *testing.T) {
	a := startAuthServer(t)
	st, g := signedIn(t, a)
	src := &Source{Store: st, Server: "gh", Resource: a.rs, Client: noRedirects()}
	ctx := t.Context()
	tok, err := src.Token(ctx)
	if err != nil || tok != g.AccessToken {
		t.Fatalf("token %q %v, want the signed-in one", tok, err)
	}
	post(t, a, "admin/expire")
	if got := initialize(t, a.rs, tok); got != http.StatusUnauthorized {
		t.Fatalf("an expired token: HTTP %d", got)
	}
	if err := src.Refused(ctx, tok); err != nil {
		t.Fatal(err)
	}
	fresh, err := src.Token(ctx)
	if err != nil || fresh == tok {
		t.Fatalf("after the refusal: %q %v", fresh, err)
	}
	if got := initialize(t, a.rs, fresh); got != http.StatusOK {
		t.Fatalf("the renewed token: HTTP %d", got)
	}
	if err := src.Refused(ctx, tok); err != nil {
		t.Fatalf("a refusal of the old token once renewed: %v", err)
	}
	if again, _ := src.Token(ctx); again != fresh {
		t.Fatalf("the old token's late refusal renewed again")
	}
	kept, err := st.Load("gh")
	if err != nil || kept.AccessToken != fresh || kept.RefreshToken == g.RefreshToken {
		t.Fatalf("the store holds %+v (%v): want the renewed token and the rotated refresh token", kept, err)
	}
	// Another process, still holding the first token, takes the renewed
	// one from the store instead of refreshing with a spent refresh token.
	other := &Source{Store: st, Server: "gh", Resource: a.rs, Client: noRedirects()}
	other.g = g
	if err := other.Refused(ctx, tok); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	if got, _ := other.Token(ctx); got != fresh {
		t.Fatalf("the other process sends %q, want the renewed token", got)
	}
}

// A token about to expire is renewed before it is sent.
func TestSource_RenewsBeforeExpiry(t *testing.T) {
	a := startAuthServer(t, "TOKEN_TTL=30")
	st, g := signedIn(t, a)
	src := &Source{Store: st, Server: "gh", Resource: a.rs, Client: noRedirects()}
	tok, err := src.Token(t.Context())
	if err != nil || tok == g.AccessToken {
		t.Fatalf("a token 30s from expiry was sent as it is (%v)", err)
	}
	if got := initialize(t, a.rs, tok); got != http.StatusOK {
		t.Fatalf("the renewed token: HTTP %d", got)
	}
}

// A revoked sign-in, no sign-in, or one for another url: each says to run
// mcp-guard auth, and never shows a token.
func TestSource_SaysToSignIn(t *testing.T) {
	a := startAuthServer(t)
	st, g := signedIn(t, a)
	ctx := t.Context()
	post(t, a, "admin/revoke")
	src := &Source{Store: st, Server: "gh", Resource: a.rs, Client: noRedirects()}
	err := src.Refused(ctx, g.AccessToken)
	if !errors.Is(err, ErrSignInAgain) || !strings.Contains(err.Error(), "mcp-guard auth gh") {
		t.Fatalf("revoked: %v", err)
	}
	for _, tc := range []struct {
		src  *Source
		want string
	}{
		{&Source{Store: st, Server: "other", Resource: a.rs, Client: noRedirects()}, "needs sign-in: run `mcp-guard auth other`"},
		{&Source{Store: st, Server: "gh", Resource: a.rs + "/elsewhere", Client: noRedirects()}, "run `mcp-guard auth gh`"},
	} {
		_, err := tc.src.Token(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src.Server, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), g.AccessToken) || strings.Contains(err.Error(), g.RefreshToken)) {
			t.Errorf("the error shows a token: %v", err)
		}
	}
	if err != nil && strings.Contains(err.Error(), g.RefreshToken) {
		t.Errorf("the error shows the refresh token: %v", err)
	}
}
