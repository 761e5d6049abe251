//go:build linux

package oauth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/mcp-guard/mcp-guard/sessionbus/sessionbustest"
)

// secretMark is in every secret the keyring tests store: no error may
// carry it.
const secretMark = "s3cr3t"

func keyringGrant(server, tag string) *Grant {
	g := testGrant(server)
	g.AccessToken = secretMark + "-at-" + server + tag
	g.RefreshToken = secretMark + "-rt-" + server + tag
	g.ClientSecret = secretMark + "-cs-" + server
	return g
}

func newTestKeyring(t *testing.T) *KeyringStore {
	t.Helper()
	env, _ := startSecretService(t)
	s, err := NewKeyringStore(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noSecret fails t when err carries a secret.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secretMark) {
		t.Errorf("an error carries a secret: %v", err)
	}
}

// putItem stores an item in the default collection as another program
// could: any label, attributes and secret.
func putItem(t *testing.T, s *KeyringStore, label string, attrs map[string]string, secret string) {
	t.Helper()
	o, cancel, err := s.begin()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]dbus.Variant{
		ssItem + ".Label":      dbus.MakeVariant(label),
		ssItem + ".Attributes": dbus.MakeVariant(attrs),
	}
	sec := ssSecret{Session: s.session, Parameters: []byte{}, Value: []byte(secret), ContentType: "text/plain"}
	var item, prompt dbus.ObjectPath
	if err := o.call(coll, ssCollection+".CreateItem", props, sec, true).Store(&item, &prompt); err != nil || prompt != noPrompt {
		t.Fatalf("create item %q: %v (prompt %s)", label, err, prompt)
	}
}

// A grant is saved as one labelled item, read back whole, replaced,
// listed and deleted; one server's grant is never another's.
func TestKeyringStore_RoundTrip(t *testing.T) {
	s := newTestKeyring(t)
	if _, err := s.Load("gh"); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("load before any sign-in: %v, want ErrNoGrant", err)
	}
	if names, err := s.List(); err != nil || len(names) != 0 {
		t.Fatalf("list of an empty keyring: %v %v", names, err)
	}
	for _, name := range []string{"linear", "gh"} {
		if err := s.Save(keyringGrant(name, "")); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.Load("gh")
	want := keyringGrant("gh", "")
	if err != nil || g.Server != "gh" || g.AccessToken != want.AccessToken || g.RefreshToken != want.RefreshToken ||
		g.ClientSecret != want.ClientSecret || !g.Expiry.Equal(want.Expiry) || !g.SignedIn.Equal(want.SignedIn) ||
		g.Issuer != want.Issuer || g.Resource != want.Resource || g.TokenURL != want.TokenURL || !slices.Equal(g.Scopes, want.Scopes) {
		t.Fatalf("load gh: %+v %v", g, err)
	}
	if g, err := s.Load("linear"); err != nil || g.Server != "linear" || g.AccessToken != keyringGrant("linear", "").AccessToken {
		t.Fatalf("load linear: %+v %v", g, err)
	}
	if _, err := s.Load("gitlab"); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("load of a server never signed in to: %v", err)
	}

	// Saving again replaces the item.
	if err := s.Save(keyringGrant("gh", "-2")); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Load("gh"); err != nil || g.AccessToken != keyringGrant("gh", "-2").AccessToken {
		t.Fatalf("load after a second save: %+v %v", g, err)
	}
	o, cancel, err := s.begin()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		t.Fatal(err)
	}
	items, err := o.search(coll, serverAttrs("gh"))
	if err != nil || len(items) != 1 {
		t.Fatalf("gh's items after two saves: %v %v", items, err)
	}
	var label dbus.Variant
	if err := o.call(items[0], dbusProps+".Get", ssItem, "Label").Store(&label); err != nil || label.Value() != "mcp-guard: gh" {
		t.Fatalf("label %v %v", label, err)
	}

	if names, err := s.List(); err != nil || !slices.Equal(names, []string{"gh", "linear"}) {
		t.Fatalf("list: %v %v", names, err)
	}
	if err := s.Delete("gh"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("gh"); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("load after delete: %v", err)
	}
	if err := s.Delete("gh"); err != nil {
		t.Fatalf("deleting what is gone: %v", err)
	}
	if names, err := s.List(); err != nil || !slices.Equal(names, []string{"linear"}) {
		t.Fatalf("list after delete: %v %v", names, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("linear"); !errors.Is(err, errKeyringClosed) {
		t.Fatalf("load after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// List names only mcp-guard's items: another program's item, even one with
// mcp-guard's server attribute, is not a grant, nor is an item whose server
// attribute is no server name.
func TestKeyringStore_ListsOnlyItsOwnItems(t *testing.T) {
	s := newTestKeyring(t)
	if err := s.Save(keyringGrant("gh", "")); err != nil {
		t.Fatal(err)
	}
	putItem(t, s, "mcp-guard: stranger", map[string]string{"application": "other-app", "mcp-guard-server": "stranger"}, secretMark)
	putItem(t, s, "mcp-guard: nobody", map[string]string{"mcp-guard-server": "nobody"}, secretMark)
	putItem(t, s, "mcp-guard: ../x", map[string]string{"application": "mcp-guard", "mcp-guard-server": "../x"}, secretMark)
	names, err := s.List()
	if err != nil || !slices.Equal(names, []string{"gh"}) {
		t.Fatalf("list: %v %v, want [gh]", names, err)
	}
	for _, name := range []string{"stranger", "nobody"} {
		if _, err := s.Load(name); !errors.Is(err, ErrNoGrant) {
			t.Fatalf("load %s, another program's item: %v, want ErrNoGrant", name, err)
		}
	}
}

// What is not a server name, or an item that is not that server's grant,
// is refused; no error carries a secret.
func TestKeyringStore_Refusals(t *testing.T) {
	s := newTestKeyring(t)
	for _, name := range []string{"", "../x", "a/b", "-x", "a b", strings.Repeat("a", 40)} {
		_, err := s.Load(name)
		if err == nil || errors.Is(err, ErrNoGrant) || !strings.Contains(err.Error(), "not a server name") {
			t.Errorf("load %q: %v", name, err)
		}
		g := keyringGrant("gh", "")
		g.Server = name
		if err := s.Save(g); err == nil {
			t.Errorf("save %q: no error", name)
		} else {
			noSecret(t, err)
		}
		if err := s.Delete(name); err == nil || !strings.Contains(err.Error(), "not a server name") {
			t.Errorf("delete %q: %v", name, err)
		}
	}
	if names, _ := s.List(); len(names) != 0 {
		t.Fatalf("a refused save stored something: %v", names)
	}

	other := keyringGrant("other", "")
	otherJSON := `{"server":"other","resource":"https://mcp.example.com/mcp","issuer":"https://auth.example.com/","token_url":"https://auth.example.com/token","client_id":"c1","access_token":"` + other.AccessToken + `"}`
	tests := []struct {
		name, secret, want string
	}{
		{"another server's grant", otherJSON, `holds the grant of "other", not "gh"`},
		{"not JSON", secretMark + " is not JSON", "not a grant mcp-guard wrote"},
		{"JSON with the secret in a wrong type", `{"server":"gh","access_token":["` + secretMark + `"]}`, "not a grant mcp-guard wrote"},
		{"no access token", `{"server":"gh","resource":"https://mcp.example.com/mcp","issuer":"https://auth.example.com/","token_url":"https://auth.example.com/token","client_id":"c1","refresh_token":"` + secretMark + `"}`, "no access token"},
		{"too big", `{"server":"gh","access_token":"` + secretMark + strings.Repeat("x", maxGrantBytes) + `"}`, "over"},
	}
	for _, tt := range tests {
		putItem(t, s, "mcp-guard: gh", serverAttrs("gh"), tt.secret)
		g, err := s.Load("gh")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: load gives %+v, %v; want an error with %q", tt.name, g, err, tt.want)
		}
		noSecret(t, err)
	}
}

// A locked keyring whose unlocking needs a prompt is an error saying so,
// and naming [auth] store = "file".
func TestKeyringStore_Locked(t *testing.T) {
	s := newTestKeyring(t)
	if err := s.Save(keyringGrant("gh", "")); err != nil {
		t.Fatal(err)
	}
	o, cancel, err := s.begin()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		t.Fatal(err)
	}
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := o.call(ssPath, ssService+".Lock", []dbus.ObjectPath{coll}).Store(&locked, &prompt); err != nil || !slices.Contains(locked, coll) {
		t.Fatalf("lock %s: %v %v (prompt %s)", coll, locked, err, prompt)
	}
	_, err = s.Load("gh")
	if !errors.Is(err, errKeyringLocked) || !strings.Contains(err.Error(), `[auth] store = "file"`) {
		t.Fatalf("load from a locked keyring: %v", err)
	}
	if err := s.Save(keyringGrant("gh", "-2")); !errors.Is(err, errKeyringLocked) {
		t.Fatalf("save to a locked keyring: %v", err)
	}
	noSecret(t, err)
	if _, err := s.List(); !errors.Is(err, errKeyringLocked) {
		t.Fatalf("list of a locked keyring: %v", err)
	}
	if err := s.Delete("gh"); !errors.Is(err, errKeyringLocked) {
		t.Fatalf("delete from a locked keyring: %v", err)
	}
}

// Without a session bus, or with one but no Secret Service on it, the
// constructor says what to start or set.
func TestNewKeyringStore_NoSecretService(t *testing.T) {
	_, err := NewKeyringStore(context.Background(), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "no D-Bus session bus") || !strings.Contains(err.Error(), `[auth] store = "file"`) {
		t.Fatalf("no bus: %v", err)
	}
	addr := sessionbustest.StartBus(t)
	_, err = NewKeyringStore(context.Background(), func(k string) (string, bool) { return addr, k == "DBUS_SESSION_BUS_ADDRESS" })
	if err == nil || !strings.Contains(err.Error(), "no Secret Service on the session bus") || !strings.Contains(err.Error(), `[auth] store = "file"`) {
		t.Fatalf("a bus without a Secret Service: %v", err)
	}
}
