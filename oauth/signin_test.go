package oauth

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// authServer is testdata/peers/oauthserver.mjs running: a real OAuth
// authorization server (the TypeScript SDK's auth router) and an MCP
// server that takes only its tokens.
type authServer struct {
	as, rs string // the issuer, the MCP server's URL
}

// startAuthServer runs oauthserver.mjs with env until the test ends.
func startAuthServer(t *testing.T, env ...string) *authServer {
	t.Helper()
	peers, err := filepath.Abs("../testdata/peers")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(peers, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the npm peers are not installed (run make peers): %v", err)
	}
	cmd := exec.Command("node", "oauthserver.mjs")
	cmd.Dir = peers
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("oauthserver.mjs stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 4 {
		t.Fatalf("oauthserver.mjs said %q (%v)\n%s", line, err, stderr.String())
	}
	return &authServer{as: f[1], rs: f[3]}
}

// requests is what the two servers were asked, "METHOD PATH" each.
func (a *authServer) requests(t *testing.T) []string {
	t.Helper()
	var log []string
	getJSON(t, a.as+"admin/log", &log)
	return log
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// noRedirects is the client a sign-in uses.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// browser plays the user: it opens the sign-in address, submits the
// consent form, and follows the redirect back to mcp-guard, after edit
// (when set) has changed it.
func browser(t *testing.T, edit func(*url.URL)) func(string) error {
	return func(authURL string) error {
		c := noRedirects()
		resp, err := c.Get(authURL)
		if err != nil {
			return err
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="request" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			return fmt.Errorf("no consent form (HTTP %d): %s", resp.StatusCode, page)
		}
		au, _ := url.Parse(authURL)
		resp, err = c.PostForm(au.Scheme+"://"+au.Host+"/consent", url.Values{"request": {string(m[1])}})
		if err != nil {
			return err
		}
		resp.Body.Close()
		back, err := resp.Location()
		if err != nil {
			return fmt.Errorf("consent did not redirect (HTTP %d): %v", resp.StatusCode, err)
		}
		if edit != nil {
			edit(back)
		}
		go func() {
			if resp, err := c.Get(back.String()); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
}

// initialize sends an MCP initialize with token and returns the status.
func initialize(t *testing.T, rs, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, rs, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func signIn(a *authServer, open func(string) error, confirm func(*Discovery) (bool, error)) *SignIn {
	return &SignIn{Server: "gh", Resource: a.rs, Client: noRedirects(), Open: open, Confirm: confirm}
}

func yes(*Discovery) (bool, error) { return true, nil }

// A sign-in with Dynamic Client Registration: the authorization server,
// on another origin, is confirmed first; the token is bound to the server
// and takes an MCP request there.
func TestSignIn_DynamicClientRegistration(t *testing.T) {
	a := startAuthServer(t)
	var shown *Discovery
	s := signIn(a, browser(t, nil), func(d *Discovery) (bool, error) { shown = d; return true, nil })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if shown == nil || shown.AS.Issuer != a.as {
		t.Fatalf("the other origin was not confirmed with its issuer: %+v", shown)
	}
	if g.Issuer != a.as || g.Resource != a.rs || g.Server != "gh" || g.AccessToken == "" || g.RefreshToken == "" || g.ClientID == "" || !slices.Equal(g.Scopes, []string{"mcp"}) {
		t.Fatalf("grant %+v", g)
	}
	if time.Until(g.Expiry) < 50*time.Minute {
		t.Fatalf("expiry %s, want about an hour from now", g.Expiry)
	}
	if got := initialize(t, a.rs, g.AccessToken); got != http.StatusOK {
		t.Fatalf("initialize with the token: HTTP %d", got)
	}
	if got := initialize(t, a.rs, "forged"); got != http.StatusUnauthorized {
		t.Fatalf("initialize with another token: HTTP %d", got)
	}
	if log := a.requests(t); !slices.Contains(log, "POST /register") || !slices.Contains(log, "POST /token") {
		t.Fatalf("the authorization server was asked %v", log)
	}
}

// An authorization server on another origin that the user does not
// confirm is never contacted beyond its metadata; a forged state, or an
// answer from another issuer, is refused.
func TestSignIn_Refusals(t *testing.T) {
	a := startAuthServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	no := func(*Discovery) (bool, error) { return false, nil }
	if _, err := signIn(a, browser(t, nil), no).Run(ctx); err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("unconfirmed: %v", err)
	}
	if _, err := signIn(a, browser(t, nil), nil).Run(ctx); err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("no one to confirm: %v", err)
	}
	// Another issuer than the one pinned at an earlier sign-in is asked
	// about, naming both.
	var asked *Discovery
	pinned := signIn(a, browser(t, nil), func(d *Discovery) (bool, error) { asked = d; return false, nil })
	pinned.Pinned = "https://auth.example/"
	if _, err := pinned.Run(ctx); err == nil || !strings.Contains(err.Error(), "not the authorization server pinned for it (https://auth.example/)") {
		t.Fatalf("another issuer than the pinned one: %v", err)
	}
	if asked == nil || asked.Pinned != "https://auth.example/" || asked.AS.Issuer != a.as {
		t.Fatalf("the user was asked about %+v", asked)
	}
	if log := a.requests(t); slices.Contains(log, "POST /register") || slices.Contains(log, "GET /authorize") {
		t.Fatalf("an unconfirmed authorization server was asked %v", log)
	}
	for name, edit := range map[string]func(*url.URL){
		"forged state": func(u *url.URL) { q := u.Query(); q.Set("state", "forged"); u.RawQuery = q.Encode() },
		"other issuer": func(u *url.URL) { q := u.Query(); q.Set("iss", "https://evil.example/"); u.RawQuery = q.Encode() },
		"no issuer":    func(u *url.URL) { q := u.Query(); q.Del("iss"); u.RawQuery = q.Encode() },
	} {
		_, err := signIn(a, browser(t, edit), yes).Run(ctx)
		if err == nil {
			t.Errorf("%s: signed in", name)
		}
	}
	if log := a.requests(t); slices.Contains(log, "POST /token") {
		t.Fatalf("a code was exchanged after a refused answer: %v", log)
	}
}

// A client registered beforehand signs in as itself, with no
// registration.
func TestSignIn_PreregisteredClient(t *testing.T) {
	a := startAuthServer(t, "NO_DCR=1", "PRE_CLIENT=mcp-guard-pre")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := signIn(a, browser(t, nil), yes).Run(ctx); err == nil || !strings.Contains(err.Error(), "oauth.client_id") {
		t.Fatalf("without a client_id and no registration: %v", err)
	}
	s := signIn(a, browser(t, nil), yes)
	s.ClientID = "mcp-guard-pre"
	g, err := s.Run(ctx)
	if err != nil || g.ClientID != "mcp-guard-pre" {
		t.Fatalf("%+v %v", g, err)
	}
	if got := initialize(t, a.rs, g.AccessToken); got != http.StatusOK {
		t.Fatalf("initialize with the token: HTTP %d", got)
	}
}

// Where the authorization server takes Client ID Metadata Documents,
// mcp-guard's published document is its client_id: the server fetches it
// (over https, from a test CA it was told to trust) and registers nothing.
func TestSignIn_ClientIDMetadataDocument(t *testing.T) {
	var docURL string
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "mcp-guard",
			"redirect_uris": []string{"http://127.0.0.1/callback"}, "grant_types": []string{"authorization_code", "refresh_token"},
			"response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	}))
	defer doc.Close()
	docURL = doc.URL + "/mcp-guard.json"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: doc.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAuthServer(t, "CIMD=1", "NODE_EXTRA_CA_CERTS="+ca)
	s := signIn(a, browser(t, nil), yes)
	s.ClientMetadataURL = docURL
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g, err := s.Run(ctx)
	if err != nil || g.ClientID != docURL {
		t.Fatalf("%+v %v", g, err)
	}
	if got := initialize(t, a.rs, g.AccessToken); got != http.StatusOK {
		t.Fatalf("initialize with the token: HTTP %d", got)
	}
	if log := a.requests(t); slices.Contains(log, "POST /register") {
		t.Fatalf("registered though the document was taken: %v", log)
	}
}
