package main

import (
	"bufio"
	"bytes"
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

	"github.com/mcp-guard/mcp-guard/sessionbus/sessionbustest"
)

// oauthPeer is a real OAuth authorization server, testdata/peers/oauthserver.mjs
// (the TypeScript SDK's auth router), and in front of it a real MCP server,
// testdata/goresource (the go-sdk's, behind its bearer-token middleware),
// which takes only tokens the authorization server issued for it.
type oauthPeer struct {
	as, rs string
	cmds   []*exec.Cmd
}

// stop ends the peer now.
func (p *oauthPeer) stop(t *testing.T) {
	for _, c := range p.cmds {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
	}
}

// startOAuthPeer starts both servers; env is oauthserver.mjs's, but for
// RS_PORT, which is the go-sdk server's port.
func startOAuthPeer(t *testing.T, env ...string) *oauthPeer {
	t.Helper()
	binaries(t)
	addr := "127.0.0.1:0"
	env = slices.DeleteFunc(env, func(kv string) bool {
		port, ok := strings.CutPrefix(kv, "RS_PORT=")
		if ok {
			addr = "127.0.0.1:" + port
		}
		return ok
	})
	p := &oauthPeer{}
	as := startPeerLine(t, p, "oauthserver.mjs", env, "node", peerPath(t, "../oauthserver.mjs"))
	p.as = as[1]
	rs := startPeerLine(t, p, "goresource", nil, bins.goRS, "-as", p.as, "-addr", addr)
	p.rs = rs[1]
	return p
}

// startPeerLine starts a peer in its own process group and returns the
// fields of the first line it prints.
func startPeerLine(t *testing.T, p *oauthPeer, name string, env []string, argv ...string) []string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = filepath.Dir(peerPath(t, "../oauthserver.mjs"))
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs := &lockedBuffer{}
	cmd.Stderr = errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmds = append(p.cmds, cmd)
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, errs)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 2 {
		t.Fatalf("%s said %q (%v)\n%s", name, line, err, errs)
	}
	return f
}

func (p *oauthPeer) admin(t *testing.T, path string) {
	t.Helper()
	resp, err := http.Post(p.as+"admin/"+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// log is every request the authorization server got, "METHOD PATH".
func (p *oauthPeer) log(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(p.as + "admin/log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// tokens is every token the authorization server issued.
func (p *oauthPeer) tokens(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(p.as + "admin/tokens")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// consent plays the user in the browser: it opens authURL, allows, and
// follows the redirect back to mcp-guard auth.
func consent(t testing.TB, authURL string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="request" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no consent form at %s (HTTP %d): %s", authURL, resp.StatusCode, page)
	}
	au, _ := url.Parse(authURL)
	resp, err = c.PostForm(au.Scheme+"://"+au.Host+"/consent", url.Values{"request": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := resp.Location()
	if err != nil {
		t.Fatalf("consent did not redirect (HTTP %d)", resp.StatusCode)
	}
	resp, err = c.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "signed in") {
		t.Fatalf("the redirect back to mcp-guard: HTTP %d %s", resp.StatusCode, body)
	}
}

// signInCLI runs mcp-guard auth SERVER as a user would, without a browser:
// it reads the address auth prints, consents there, and waits for auth.
func (e *env) signInCLI(cfg, server string, flags ...string) string {
	e.t.Helper()
	args := append([]string{"auth", server, "--config", cfg, "--no-browser"}, flags...)
	var errs lockedBuffer
	var out io.Reader
	var wait func() error
	if e.inProcess() {
		pr, pw := io.Pipe()
		auth := e.startHere(pw, &errs, args...)
		go func() { <-auth.done; pw.Close() }()
		out = pr
		wait = func() error {
			if code := auth.wait(); code != 0 {
				return fmt.Errorf("exit %d", code)
			}
			return nil
		}
	} else {
		cmd := exec.Command(bins.guard, args...)
		cmd.Env = append(e.cliEnv(), coverEnv()...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			e.t.Fatal(err)
		}
		cmd.Stderr = &errs
		if err := cmd.Start(); err != nil {
			e.t.Fatal(err)
		}
		out, wait = stdout, cmd.Wait
	}
	var printed strings.Builder
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		printed.WriteString(line)
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "http"); ok && strings.Contains(line, "/authorize?") {
			consent(e.t, "http"+u)
			break
		}
		if err != nil {
			wait()
			e.t.Fatalf("auth printed no address to sign in at:\n%s%s", printed.String(), errs.String())
		}
	}
	rest, _ := io.ReadAll(r)
	printed.Write(rest)
	if err := wait(); err != nil {
		e.t.Fatalf("auth %s: %v\n%s%s", server, err, printed.String(), errs.String())
	}
	return printed.String()
}

const oauthRules = "[[rule]]\nserver = \"gh\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"

// A url server that requires OAuth, end to end: mcp-guard auth signs in
// (the authorization server on another origin confirmed with --yes), serve
// governs its tool with the token, renews it when the server refuses it
// mid-session, and says to sign in again once it is revoked; no token is
// ever in what the host receives, the ledger, its WAL, serve's log or the
// OpenTelemetry export (with the arguments exported).
func TestOAuth_SignInServeRenewRevoke(t *testing.T) {
	t.Parallel()
	p := startOAuthPeer(t)
	col := startCollector(t, 0)
	e := newEnv(t)
	good := e.fake("good", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	cfg := e.config(fmt.Sprintf("[export]\notlp = %q\ninclude_arguments = true\n", col.url()),
		fmt.Sprintf("[[server]]\nname = \"gh\"\nurl = %q\noauth = {}\n", p.rs), good, oauthRules,
		"[[rule]]\nserver = \"good\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n")

	if out, code := e.mcpGuard("auth", "--list", "--config", cfg); code != 0 || !strings.Contains(out, "gh: not signed in: run mcp-guard auth gh") {
		t.Fatalf("auth --list before sign-in (exit %d):\n%s", code, out)
	}
	out, code := e.mcpGuard("auth", "gh", "--config", cfg, "--no-browser")
	if code == 0 || !strings.Contains(out, "another origin") || !strings.Contains(out, "--yes") {
		t.Fatalf("auth without a terminal or --yes, for an authorization server on another origin (exit %d):\n%s", code, out)
	}
	out = e.signInCLI(cfg, "gh", "--yes")
	if !strings.Contains(out, "signed in to gh at "+p.as) {
		t.Fatalf("auth said:\n%s", out)
	}
	if out, code := e.mcpGuard("auth", "--list", "--config", cfg); code != 0 || !strings.Contains(out, "gh: signed in at "+p.as) || !strings.Contains(out, "renewable") {
		t.Fatalf("auth --list (exit %d):\n%s", code, out)
	}

	h := e.connect(cfg, "")
	call := func() string {
		t.Helper()
		res, err := h.call(t, "gh__whoami", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return resultText(res)
	}
	if got := call(); !regexp.MustCompile(`^hello \S+$`).MatchString(got) {
		t.Fatalf("whoami through serve: %q", got)
	}
	if log := p.log(t); !slices.Contains(log, "POST /introspect") || !slices.Contains(log, "POST /register") {
		t.Fatalf("auth did not register (DCR), or the server did not ask the authorization server about the token: %q", log)
	}
	// A server that puts the token in a result: the host gets it redacted.
	leak := func() {
		t.Helper()
		res, err := h.call(t, "gh__leak", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(res); got != "your token is [redacted: gh sign-in token]" {
			t.Fatalf("the token a server leaked reached the host as %q", got)
		}
	}
	leak()
	p.admin(t, "expire")
	if got := call(); !strings.HasPrefix(got, "hello ") {
		t.Fatalf("whoami once the token expired early (serve renews it): %q", got)
	}
	leak() // the renewed token is redacted too
	// The model cannot hand a token to another server.
	for _, tok := range p.tokens(t)[:2] {
		res, err := h.call(t, "good__echo", map[string]any{"note": "try " + tok})
		if err == nil && !res.IsError {
			t.Fatalf("a call carrying a sign-in token was forwarded: %v", resultText(res))
		}
	}
	if n := len(e.calls("good")); n != 0 {
		t.Fatalf("the other server got %d calls carrying a token", n)
	}
	p.admin(t, "revoke")
	res, err := h.call(t, "gh__whoami", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "needs sign-in: the operator runs `mcp-guard auth gh`") {
		t.Fatalf("whoami once the sign-in was revoked: %v %v, want the command that signs in again", err, resultText(res))
	}
	if res, err := h.call(t, "good__echo", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("the other server after gh's sign-in was revoked: %v %v", err, resultText(res))
	}
	out, _ = e.mcpGuard("log", "--config", cfg, "--limit", "20")
	if strings.Count(out, "gh/whoami") != 3 || strings.Count(out, "gh/leak") != 2 {
		t.Fatalf("the ledger log:\n%s", out)
	}

	// No token anywhere it must not be.
	tokens := p.tokens(t)
	if len(tokens) < 4 {
		t.Fatalf("the authorization server issued %d tokens, want a sign-in's and a renewal's", len(tokens))
	}
	h.Close()
	col.find("log", map[string]string{"gen_ai.tool.name": "leak"}) // the export is on, and has the calls
	places := map[string][]byte{"serve's log": []byte(h.stderr.String()), "the export": []byte(col.raw())}
	for _, f := range []string{"ledger.db", "ledger.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(e.state, f))
		places[f] = b
	}
	logs, _ := filepath.Glob(filepath.Join(e.state, "logs", "*"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		places[f] = b
	}
	for where, b := range places {
		for _, tok := range tokens {
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("a token is in %s", where)
			}
		}
	}
	fi, err := os.Stat(filepath.Join(e.state, "auth", "gh.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the grant file: %v %v", fi, err)
	}
	if out, code := e.mcpGuard("auth", "--logout", "gh", "--config", cfg); code != 0 {
		t.Fatalf("logout (exit %d): %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.state, "auth", "gh.json")); !os.IsNotExist(err) {
		t.Fatalf("the grant outlived logout: %v", err)
	}
}

// serve with a server that needs sign-in and has none: its tools are not
// shown, the host is told it is unavailable until the operator signs in,
// tools and the log say the command to run, the others serve.
func TestOAuth_NotSignedInSaysWhatToRun(t *testing.T) {
	t.Parallel()
	p := startOAuthPeer(t)
	e := newEnv(t)
	good := e.fake("good", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"gh\"\nurl = %q\noauth = {}\n", p.rs), good, oauthRules,
		"[[rule]]\nserver = \"good\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n")
	out, code := e.mcpGuard("tools", "--config", cfg)
	if code != 1 || !strings.Contains(out, "mcp-guard auth gh") || !strings.Contains(out, "good__echo") {
		t.Fatalf("tools (exit %d):\n%s", code, out)
	}
	h := e.connect(cfg, "")
	if got := h.toolNames(t); len(got) != 1 || got[0] != "good__echo" {
		t.Fatalf("host sees %v", got)
	}
	if got := h.InitializeResult().Instructions; got != "mcp-guard: server gh is unavailable until the operator signs in to it (mcp-guard auth gh)." {
		t.Fatalf("the host was told %q", got)
	}
	eventually(t, "the log to say what to run", func() bool { return strings.Contains(h.stderr.String(), "mcp-guard auth gh") })
}

// The authorization server is pinned at the first sign-in. When the
// server names another one, serve cannot renew the sign-in and says to run
// auth; auth shows the change and signs in there only when confirmed,
// pinning the new one; and a grant whose issuer is not the pinned one is
// never sent.
func TestOAuth_ChangedIssuerIsConfirmedAndPinned(t *testing.T) {
	t.Parallel()
	rsPort := fmt.Sprint(freePort(t))
	p1 := startOAuthPeer(t, "RS_PORT="+rsPort)
	e := newEnv(t)
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"gh\"\nurl = %q\noauth = {}\n", p1.rs), oauthRules)
	e.signInCLI(cfg, "gh", "--yes")
	if out, _ := e.mcpGuard("pin", "list", "--config", cfg); !strings.Contains(out, "oauth:issuer") {
		t.Fatalf("the issuer is not pinned:\n%s", out)
	}
	p1.stop(t)
	p2 := startOAuthPeer(t, "RS_PORT="+rsPort)
	if p2.as == p1.as || p2.rs != p1.rs {
		t.Fatalf("the second authorization server %s, server %s", p2.as, p2.rs)
	}
	out, code := e.mcpGuard("tools", "--config", cfg)
	if code != 1 || !strings.Contains(out, "mcp-guard auth gh") {
		t.Fatalf("tools with a sign-in the server no longer takes (exit %d):\n%s", code, out)
	}
	out, code = e.mcpGuard("auth", "gh", "--config", cfg, "--no-browser")
	if code == 0 || !strings.Contains(out, "now has you sign in at "+p2.as+"; it was "+p1.as) {
		t.Fatalf("auth at a changed authorization server, unconfirmed (exit %d):\n%s", code, out)
	}
	e.signInCLI(cfg, "gh", "--yes")
	h := e.connect(cfg, "")
	res, err := h.call(t, "gh__whoami", map[string]any{})
	if err != nil || !strings.HasPrefix(resultText(res), "hello ") {
		t.Fatalf("whoami after signing in at the new authorization server: %v %v", err, resultText(res))
	}
	h.Close()

	// A grant from another authorization server than the pinned one (here
	// the stored one, edited) is not used.
	grant := filepath.Join(e.state, "auth", "gh.json")
	b, err := os.ReadFile(grant)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(grant, bytes.Replace(b, []byte(p2.as), []byte(p1.as), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = e.mcpGuard("tools", "--config", cfg)
	if code != 1 || !strings.Contains(out, "not the authorization server pinned for it") {
		t.Fatalf("tools with a grant from another issuer than the pinned one (exit %d):\n%s", code, out)
	}
}

// With [auth] store = "keyring", auth keeps the sign-in in the desktop's
// keyring (a real gnome-keyring-daemon on a private bus) and serve reads it
// from there; no grant file is written.
func TestOAuth_KeyringStore(t *testing.T) {
	t.Parallel()
	addr := sessionbustest.StartSecretService(t)
	p := startOAuthPeer(t)
	e := newEnv(t)
	e.extra = append(e.extra, "DBUS_SESSION_BUS_ADDRESS="+addr)
	cfg := e.config("[auth]\nstore = \"keyring\"\n", fmt.Sprintf("[[server]]\nname = \"gh\"\nurl = %q\noauth = {}\n", p.rs), oauthRules)
	out := e.signInCLI(cfg, "gh", "--yes")
	if !strings.Contains(out, "the token is kept in the desktop's keyring") {
		t.Fatalf("auth said:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.state, "auth")); !os.IsNotExist(err) {
		t.Fatalf("a grant directory was written beside the ledger: %v", err)
	}
	h := e.connect(cfg, "")
	res, err := h.call(t, "gh__whoami", map[string]any{})
	if err != nil || !strings.HasPrefix(resultText(res), "hello ") {
		t.Fatalf("whoami with the keyring's sign-in: %v %v", err, resultText(res))
	}
	if out, code := e.mcpGuard("auth", "--list", "--config", cfg); code != 0 || !strings.Contains(out, "gh: signed in at "+p.as) {
		t.Fatalf("auth --list (exit %d):\n%s", code, out)
	}
}

// init carries over a remote server the host signs in to: it finds that
// the server asks for OAuth, writes oauth = {} for it, and says to run
// auth; once signed in, tools lists the server's tools with the config.
func TestOAuth_InitCarriesASignInServerOver(t *testing.T) {
	t.Parallel()
	p := startOAuthPeer(t)
	e := newEnv(t)
	claude := filepath.Join(e.dir, "claude.json")
	writeFile(t, claude, fmt.Sprintf(`{"mcpServers":{"gh":{"url":%q}}}`, p.rs))
	cfg := filepath.Join(e.dir, "guard.toml")
	out, code := e.mcpGuard("init", "--from", claude, "--config", cfg)
	if code != 0 || !strings.Contains(out, "server gh: signs in at "+p.as+" (OAuth): run mcp-guard auth gh") || !strings.Contains(out, "next for gh: mcp-guard auth gh") {
		t.Fatalf("init (exit %d):\n%s", code, out)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), "oauth = {}") {
		t.Fatalf("written config:\n%s", b)
	}
	// With the config init wrote, auth signs in and every tool of the
	// server asks.
	e.signInCLI(cfg, "gh", "--yes")
	out, code = e.mcpGuard("tools", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`gh\s+whoami\s+gh__whoami\s+\S+\s+write\s+ask`).MatchString(out) {
		t.Fatalf("tools once signed in (exit %d):\n%s", code, out)
	}
}

// Where the authorization server takes Client ID Metadata Documents and
// oauth.client_metadata_url names mcp-guard's document, auth signs in with
// that URL as its client_id (the server fetches it over https, from a test
// CA it was told to trust) and registers nothing; serve's calls are made as
// that client.
func TestOAuth_ClientIDMetadataDocument(t *testing.T) {
	t.Parallel()
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
	p := startOAuthPeer(t, "CIMD=1", "NO_DCR=1", "NODE_EXTRA_CA_CERTS="+ca)
	e := newEnv(t)
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"gh\"\nurl = %q\noauth = {client_metadata_url = %q}\n", p.rs, docURL), oauthRules)
	e.signInCLI(cfg, "gh", "--yes")
	h := e.connect(cfg, "")
	res, err := h.call(t, "gh__whoami", map[string]any{})
	if err != nil || resultText(res) != "hello "+docURL {
		t.Fatalf("whoami after signing in with the client ID metadata document: %v %q", err, resultText(res))
	}
	if log := p.log(t); slices.Contains(log, "POST /register") {
		t.Fatalf("registered though the document was taken: %v", log)
	}
}
