//go:build linux || freebsd || openbsd || netbsd || dragonfly

package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/mcp-guard/mcp-guard/sessionbus"
)

// The keyring store's items, as the Secret Service holds them. Each Grant
// is one item in the default collection: its label names mcp-guard and
// the server, its attributes are what the store searches by, and its
// secret is the Grant's JSON. The attributes and label are not secret
// (any program on the session bus can read them); the secret is.
const (
	keyringAppAttr    = "application"
	keyringApp        = "mcp-guard"
	keyringServerAttr = "mcp-guard-server"
	keyringLabel      = "mcp-guard: " // + the server name
)

// keyringFileHint ends each keyring error that a setting would avoid.
const keyringFileHint = `or set [auth] store = "file"`

// The freedesktop Secret Service API
// (https://specifications.freedesktop.org/secret-service-spec/).
const (
	ssName       = "org.freedesktop.secrets"
	ssPath       = dbus.ObjectPath("/org/freedesktop/secrets")
	ssService    = "org.freedesktop.Secret.Service"
	ssCollection = "org.freedesktop.Secret.Collection"
	ssItem       = "org.freedesktop.Secret.Item"
	ssSession    = "org.freedesktop.Secret.Session"
	ssPrompt     = "org.freedesktop.Secret.Prompt"
	dbusProps    = "org.freedesktop.DBus.Properties"
	noPrompt     = dbus.ObjectPath("/")
)

// keyringTimeout bounds one store operation (all its D-Bus calls), and
// the constructor's connecting.
const keyringTimeout = 10 * time.Second

// ssSecret is the API's Secret struct, (oayays). With the "plain"
// algorithm, Value is the secret itself: acceptable on the session bus,
// which only the user's own processes reach.
type ssSecret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

var (
	errKeyringLocked = errors.New("oauth: keyring: the keyring is locked and unlocking it needs a password prompt, which mcp-guard does not show: unlock it (log in to the desktop session, or open it in Seahorse) " + keyringFileHint)
	errKeyringClosed = errors.New("oauth: keyring: the store is closed")
)

// KeyringStore keeps Grants in the desktop's keyring through the
// freedesktop Secret Service on the D-Bus session bus (gnome-keyring,
// KeePassXC, KWallet's Secret Service): one item per server in the
// default collection. It never shows a prompt: a keyring that is locked
// and would need its password is an error saying so. (On macOS and other
// systems NewKeyringStore fails, naming [auth] store = "file": the
// Keychain is not supported.) Its methods are safe for concurrent use.
type KeyringStore struct {
	mu      sync.Mutex
	conn    *dbus.Conn      // nil once closed
	session dbus.ObjectPath // the "plain" session the secrets travel in
}

var _ Store = (*KeyringStore)(nil)

// NewKeyringStore connects to the Secret Service on the session bus env
// names (see sessionbus.Address; no bus is ever started) and opens a
// session with it, within ctx and keyringTimeout.
func NewKeyringStore(ctx context.Context, env func(string) (string, bool)) (*KeyringStore, error) {
	addr := sessionbus.Address(env)
	if addr == "" {
		return nil, errors.New("oauth: keyring: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus is not a socket): run mcp-guard in the desktop session " + keyringFileHint)
	}
	ctx, cancel := context.WithTimeout(ctx, keyringTimeout)
	defer cancel()
	conn, err := sessionbus.Dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("oauth: keyring: session bus: %w", err)
	}
	var out dbus.Variant
	var session dbus.ObjectPath
	err = conn.Object(ssName, ssPath).CallWithContext(ctx, ssService+".OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session)
	if err != nil {
		conn.Close()
		var de dbus.Error
		if errors.As(err, &de) && (de.Name == "org.freedesktop.DBus.Error.ServiceUnknown" || de.Name == "org.freedesktop.DBus.Error.NameHasNoOwner") {
			return nil, errors.New("oauth: keyring: no Secret Service on the session bus: start a keyring (e.g. gnome-keyring) " + keyringFileHint)
		}
		return nil, fmt.Errorf("oauth: keyring: open a Secret Service session: %w", err)
	}
	return &KeyringStore{conn: conn, session: session}, nil
}

func (s *KeyringStore) String() string {
	return "the desktop keyring (Secret Service, default collection)"
}

// Close ends the session and the bus connection. It is safe to call more
// than once.
func (s *KeyringStore) Close() error {
	s.mu.Lock()
	conn := s.conn
	s.conn = nil
	s.mu.Unlock()
	if conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Object(ssName, s.session).CallWithContext(ctx, ssSession+".Close", 0) // the connection's end closes it too
	return conn.Close()
}

// op is one store operation's connection and deadline.
type op struct {
	ctx  context.Context
	conn *dbus.Conn
}

func (s *KeyringStore) begin() (op, context.CancelFunc, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return op{}, nil, errKeyringClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), keyringTimeout)
	return op{ctx: ctx, conn: conn}, cancel, nil
}

func (o op) call(path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	return o.conn.Object(ssName, path).CallWithContext(o.ctx, method, 0, args...)
}

// collection is the default collection, unlocked.
func (o op) collection() (dbus.ObjectPath, error) {
	var coll dbus.ObjectPath
	if err := o.call(ssPath, ssService+".ReadAlias", "default").Store(&coll); err != nil {
		return "", fmt.Errorf("oauth: keyring: find the default collection: %w", err)
	}
	if coll == noPrompt || coll == "" {
		return "", errors.New("oauth: keyring: the keyring has no default collection: create one (e.g. in Seahorse) " + keyringFileHint)
	}
	var locked dbus.Variant
	if err := o.call(coll, dbusProps+".Get", ssCollection, "Locked").Store(&locked); err != nil {
		return "", fmt.Errorf("oauth: keyring: %s: %w", coll, err)
	}
	if l, ok := locked.Value().(bool); ok && !l {
		return coll, nil
	}
	return coll, o.unlock(coll)
}

// unlock unlocks path, or fails when that needs a prompt.
func (o op) unlock(path dbus.ObjectPath) error {
	var unlocked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := o.call(ssPath, ssService+".Unlock", []dbus.ObjectPath{path}).Store(&unlocked, &prompt); err != nil {
		return fmt.Errorf("oauth: keyring: unlock %s: %w", path, err)
	}
	if prompt != noPrompt {
		o.dismiss(prompt)
		return errKeyringLocked
	}
	if !slices.Contains(unlocked, path) {
		return errKeyringLocked
	}
	return nil
}

// dismiss drops a prompt the service made and mcp-guard will not show.
func (o op) dismiss(prompt dbus.ObjectPath) {
	o.call(prompt, ssPrompt+".Dismiss")
}

// search returns the collection's items whose attributes include attrs.
func (o op) search(coll dbus.ObjectPath, attrs map[string]string) ([]dbus.ObjectPath, error) {
	var items []dbus.ObjectPath
	if err := o.call(coll, ssCollection+".SearchItems", attrs).Store(&items); err != nil {
		return nil, fmt.Errorf("oauth: keyring: search: %w", err)
	}
	return items, nil
}

// serverAttrs are the attributes of server's item.
func serverAttrs(server string) map[string]string {
	return map[string]string{keyringAppAttr: keyringApp, keyringServerAttr: server}
}

func checkServerName(server string) error {
	if !serverNameRE.MatchString(server) {
		return fmt.Errorf("oauth: keyring: %q is not a server name", server)
	}
	return nil
}

// Load reads the server's Grant from its item.
func (s *KeyringStore) Load(server string) (*Grant, error) {
	if err := checkServerName(server); err != nil {
		return nil, err
	}
	o, cancel, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		return nil, err
	}
	items, err := o.search(coll, serverAttrs(server))
	if err != nil {
		return nil, err
	}
	switch len(items) {
	case 0:
		return nil, fmt.Errorf("oauth: keyring: %s: %w", server, ErrNoGrant)
	case 1:
	default:
		return nil, fmt.Errorf("oauth: keyring: %d items hold a grant for %q; remove them (e.g. in Seahorse) and sign in again", len(items), server)
	}
	var sec ssSecret
	if err := o.call(items[0], ssItem+".GetSecret", s.session).Store(&sec); err != nil {
		return nil, fmt.Errorf("oauth: keyring: read %s: %w", items[0], err)
	}
	defer clear(sec.Value)
	if len(sec.Value) > maxGrantBytes {
		return nil, fmt.Errorf("oauth: keyring: %s is over %d bytes; remove it and sign in again", items[0], maxGrantBytes)
	}
	var g Grant
	// The JSON error is left out: it can quote a character of the secret.
	if json.Unmarshal(sec.Value, &g) != nil {
		return nil, fmt.Errorf("oauth: keyring: %s: not a grant mcp-guard wrote; remove it and sign in again", items[0])
	}
	if g.Server != server {
		return nil, fmt.Errorf("oauth: keyring: %s holds the grant of %q, not %q; remove it and sign in again", items[0], g.Server, server)
	}
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("oauth: keyring: %s: %v; sign in again", items[0], err)
	}
	return &g, nil
}

// Save stores g as its server's item, replacing the one there.
func (s *KeyringStore) Save(g *Grant) error {
	if err := g.check(); err != nil {
		return fmt.Errorf("oauth: keyring: save %s: %w", g.Server, err)
	}
	if err := checkServerName(g.Server); err != nil {
		return err
	}
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("oauth: keyring: save %s: %w", g.Server, err)
	}
	defer clear(b)
	o, cancel, err := s.begin()
	if err != nil {
		return err
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		return err
	}
	props := map[string]dbus.Variant{
		ssItem + ".Label":      dbus.MakeVariant(keyringLabel + g.Server),
		ssItem + ".Attributes": dbus.MakeVariant(serverAttrs(g.Server)),
	}
	sec := ssSecret{Session: s.session, Parameters: []byte{}, Value: b, ContentType: "application/json"}
	var item, prompt dbus.ObjectPath
	if err := o.call(coll, ssCollection+".CreateItem", props, sec, true).Store(&item, &prompt); err != nil {
		return fmt.Errorf("oauth: keyring: save %s: %w", g.Server, err)
	}
	if prompt != noPrompt {
		o.dismiss(prompt)
		return errKeyringLocked
	}
	return nil
}

// Delete removes the server's item (each, should there be more).
func (s *KeyringStore) Delete(server string) error {
	if err := checkServerName(server); err != nil {
		return err
	}
	o, cancel, err := s.begin()
	if err != nil {
		return err
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		return err
	}
	items, err := o.search(coll, serverAttrs(server))
	if err != nil {
		return err
	}
	for _, it := range items {
		var prompt dbus.ObjectPath
		if err := o.call(it, ssItem+".Delete").Store(&prompt); err != nil {
			return fmt.Errorf("oauth: keyring: delete %s: %w", it, err)
		}
		if prompt != noPrompt {
			o.dismiss(prompt)
			return errKeyringLocked
		}
	}
	return nil
}

// List names the servers with an item of mcp-guard's.
func (s *KeyringStore) List() ([]string, error) {
	o, cancel, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer cancel()
	coll, err := o.collection()
	if err != nil {
		return nil, err
	}
	items, err := o.search(coll, map[string]string{keyringAppAttr: keyringApp})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		var v dbus.Variant
		if err := o.call(it, dbusProps+".Get", ssItem, "Attributes").Store(&v); err != nil {
			return nil, fmt.Errorf("oauth: keyring: %s: %w", it, err)
		}
		attrs, _ := v.Value().(map[string]string)
		if name := attrs[keyringServerAttr]; serverNameRE.MatchString(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
