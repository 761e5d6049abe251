package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/oauth"
)

// signInWait bounds a sign-in, the user's part in the browser included.
const signInWait = 10 * time.Minute

// cmdAuth signs in to a url server that requires it (oauth = {...}), lists
// the sign-ins kept, or forgets one.
func cmdAuth(args []string, c cli) error {
	fs := newFlagSet("auth")
	cfgFlag := fs.String("config", "", "config file")
	list := fs.Bool("list", false, "list the servers with a sign-in, and when each token expires")
	logout := fs.Bool("logout", false, "forget the sign-in of SERVER")
	yes := fs.Bool("yes", false, "sign in at an authorization server on another origin than the server's without asking")
	noBrowser := fs.Bool("no-browser", false, "print the address to sign in at; do not open a browser")
	// Flags may come before or after SERVER.
	var names []string
	for {
		if err := parseFlags(fs, args, c); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		names, args = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	if len(names) > 1 {
		return usageErr("auth: unexpected argument %q", names[1])
	}
	name := strings.Join(names, "")
	cp, err := configPath(*cfgFlag, c.env)
	if err != nil {
		return usageErr("%v", err)
	}
	cfg, err := config.Load(cp, c.env)
	if err != nil {
		return err
	}
	store := authStore(cfg, c.env)
	switch {
	case *list:
		if name != "" {
			return usageErr("auth --list: unexpected argument %q", name)
		}
		return listSignIns(c, cfg, store)
	case name == "":
		return usageErr("auth: name one server (auth SERVER), or give --list")
	}
	s, err := oauthServer(cfg, name)
	if err != nil {
		return err
	}
	if *logout {
		if err := store.Delete(s.Name); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "signed out of %s: its token is removed from %s (the authorization server may still hold it until it expires)\n", s.Name, store)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), signInWait)
	defer cancel()
	led, err := ledger.Open(ctx, cfg.Ledger.Path, ledger.Options{})
	if err != nil {
		return err
	}
	defer led.Close()
	pinned, err := pinnedIssuer(ctx, led, s.Name)
	if err != nil {
		return err
	}
	si := &oauth.SignIn{
		Pinned: pinned,
		Server: s.Name, Resource: s.URL, Client: oauthHTTPClient(),
		ClientID: s.OAuth.ClientID, ClientMetadataURL: s.OAuth.ClientMetadataURL, Scopes: s.OAuth.Scopes,
		Confirm: func(d *oauth.Discovery) (bool, error) { return confirmOrigin(c, s, d, *yes) },
		Open:    func(u string) error { return openBrowser(c, u, *noBrowser) },
	}
	if env := s.OAuth.ClientSecretEnv; env != "" {
		v, ok := c.env(env)
		if !ok || v == "" {
			return fmt.Errorf("auth: oauth.client_secret_env: $%s is not set", env)
		}
		si.ClientSecret = v
	}
	g, err := si.Run(ctx)
	if err != nil {
		return err
	}
	if err := pinIssuer(ctx, led, s.Name, g.Issuer); err != nil {
		return err
	}
	if err := store.Save(g); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "signed in to %s at %s; the token is kept in %s, and mcp-guard serve sends it to %s only\n", s.Name, g.Issuer, store, s.URL)
	return nil
}

// pinnedIssuer is the authorization server pinned for server at its first
// sign-in ("" when none).
func pinnedIssuer(ctx context.Context, led *ledger.Ledger, server string) (string, error) {
	p, err := led.Pin(ctx, server, ledger.IssuerPin)
	if errors.Is(err, ledger.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var v struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(p.Raw, &v); err != nil || v.Issuer == "" {
		return "", fmt.Errorf("auth: the issuer pinned for %s is unreadable (%v)", server, err)
	}
	return v.Issuer, nil
}

// pinIssuer pins issuer for server: at the first sign-in, or, when the
// user confirmed another one (SignIn asked), in place of the old pin.
func pinIssuer(ctx context.Context, led *ledger.Ledger, server, issuer string) error {
	raw, digest := oauth.IssuerPin(issuer)
	p, err := led.ObservePinAs(ctx, server, ledger.IssuerPin, digest, raw, ledger.TrustFirstContact)
	if err != nil {
		return err
	}
	if p.State == ledger.PinPinned && p.Digest == digest {
		return nil
	}
	return led.AcceptPin(ctx, server, ledger.IssuerPin, digest)
}

// checkIssuer is serve's check of a sign-in: its issuer must be the one
// pinned for the server.
func checkIssuer(led *ledger.Ledger, server string) func(g *oauth.Grant) error {
	return func(g *oauth.Grant) error {
		p, err := led.Pin(context.Background(), server, ledger.IssuerPin)
		if errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("server %q: no authorization server is pinned for its sign-in: run `mcp-guard auth %s`", server, server)
		}
		if err != nil {
			return err
		}
		_, digest := oauth.IssuerPin(g.Issuer)
		if p.State != ledger.PinPinned || p.Digest != digest {
			pinned, _ := pinnedIssuer(context.Background(), led, server)
			return fmt.Errorf("server %q: its sign-in is at %s, not the authorization server pinned for it (%s): run `mcp-guard auth %s`, which shows the change", server, g.Issuer, pinned, server)
		}
		return nil
	}
}

// oauthServer is the [[server]] name, which must sign in.
func oauthServer(cfg *config.Config, name string) (config.ServerConfig, error) {
	for _, s := range cfg.Servers {
		if s.Name != name {
			continue
		}
		if s.URL == "" || s.OAuth == nil {
			return s, usageErr("auth: server %q does not sign in: give its [[server]] a url and oauth = {} to sign in to it", name)
		}
		return s, nil
	}
	return config.ServerConfig{}, usageErr("auth: no [[server]] named %q in the config", name)
}

// authStore is where the config keeps sign-ins: [auth] store.
func authStore(cfg *config.Config, env config.EnvFunc) oauth.Store {
	if cfg.Auth.StoreInForce() == "keyring" {
		return keyringStore{env: env}
	}
	return oauth.FileStore{Dir: filepath.Join(filepath.Dir(cfg.Ledger.Path), "auth")}
}

// keyringStore is the desktop's keyring, opened for each use: serve reads
// a sign-in when it connects a server and writes one when it renews it,
// seldom, so no connection to the bus is held between.
type keyringStore struct{ env config.EnvFunc }

// keyringWait bounds one use of the keyring, connecting included.
const keyringWait = 15 * time.Second

func (k keyringStore) with(fn func(s *oauth.KeyringStore) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), keyringWait)
	defer cancel()
	s, err := oauth.NewKeyringStore(ctx, k.env)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

func (k keyringStore) Load(server string) (g *oauth.Grant, err error) {
	err = k.with(func(s *oauth.KeyringStore) error { g, err = s.Load(server); return err })
	return g, err
}

func (k keyringStore) Save(g *oauth.Grant) error {
	return k.with(func(s *oauth.KeyringStore) error { return s.Save(g) })
}

func (k keyringStore) Delete(server string) error {
	return k.with(func(s *oauth.KeyringStore) error { return s.Delete(server) })
}

func (k keyringStore) List() (names []string, err error) {
	err = k.with(func(s *oauth.KeyringStore) error { names, err = s.List(); return err })
	return names, err
}

func (k keyringStore) String() string { return "the desktop's keyring (Secret Service)" }

// listSignIns prints each server that signs in, and its sign-in.
func listSignIns(c cli, cfg *config.Config, store oauth.Store) error {
	n := 0
	for _, s := range cfg.Servers {
		if s.OAuth == nil {
			continue
		}
		n++
		g, err := store.Load(s.Name)
		switch {
		case errors.Is(err, oauth.ErrNoGrant):
			fmt.Fprintf(c.stdout, "%s: not signed in: run mcp-guard auth %s\n", s.Name, s.Name)
		case err != nil:
			fmt.Fprintf(c.stdout, "%s: unusable: %v\n", s.Name, err)
		default:
			exp := "no expiry"
			if !g.Expiry.IsZero() {
				exp = "token expires " + g.Expiry.Local().Format(time.DateTime)
			}
			refresh := "no refresh token"
			if g.RefreshToken != "" {
				refresh = "renewable"
			}
			fmt.Fprintf(c.stdout, "%s: signed in at %s on %s; %s, %s\n", s.Name, g.Issuer, g.SignedIn.Local().Format(time.DateTime), exp, refresh)
		}
	}
	if n == 0 {
		fmt.Fprintln(c.stdout, "no server in the config signs in (oauth = {...})")
	}
	return nil
}

// confirmOrigin asks before signing in at an authorization server on
// another origin than the server's.
func confirmOrigin(c cli, s config.ServerConfig, d *oauth.Discovery, yes bool) (bool, error) {
	if d.Pinned != "" {
		fmt.Fprintf(c.stdout, "%s (%s) now has you sign in at %s; it was %s when you first signed in.\n", s.Name, s.URL, d.AS.Issuer, d.Pinned)
	}
	if d.OtherOrigin {
		fmt.Fprintf(c.stdout, "%s (%s) has you sign in at %s, another origin than its own.\n", s.Name, s.URL, d.AS.Issuer)
	}
	if yes {
		return true, nil
	}
	if !isTerminal(c.stdin) {
		return false, fmt.Errorf("auth: not signed in: confirm the authorization server %s by running this in a terminal, or with --yes", d.AS.Issuer)
	}
	fmt.Fprint(c.stdout, "Sign in there? [y/N] ")
	line, _ := bufio.NewReader(c.stdin).ReadString('\n')
	return strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes"), nil
}

// openBrowser prints the address to sign in at and, unless told not to or
// there is no desktop, opens the user's browser there.
func openBrowser(c cli, u string, no bool) error {
	fmt.Fprintf(c.stdout, "Sign in at:\n\n  %s\n\nWaiting for the browser to come back (up to %s)...\n", u, signInWait)
	if no {
		return nil
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "linux", "freebsd", "openbsd", "netbsd":
		_, x := c.env("DISPLAY")
		_, w := c.env("WAYLAND_DISPLAY")
		if !x && !w {
			return nil
		}
		cmd = exec.Command("xdg-open", u)
	default:
		return nil
	}
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
	return nil
}

// oauthHTTPClient is the client of sign-in and refresh: certificates
// verified, no redirects, no proxy from the environment, bounded.
func oauthHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
