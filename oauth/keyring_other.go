//go:build !(linux || freebsd || openbsd || netbsd || dragonfly)

package oauth

import (
	"context"
	"errors"
)

// KeyringStore keeps Grants in the desktop's keyring: the freedesktop
// Secret Service, on Linux and the BSDs only. On this system (macOS's
// Keychain and Windows' Credential Manager are not supported)
// NewKeyringStore fails, naming [auth] store = "file".
type KeyringStore struct{}

var _ Store = (*KeyringStore)(nil)

var errNoKeyring = errors.New(`oauth: keyring: mcp-guard keeps tokens in a keyring only through the freedesktop Secret Service (Linux, BSD), not on this system: set [auth] store = "file"`)

// NewKeyringStore fails on this system.
func NewKeyringStore(ctx context.Context, env func(string) (string, bool)) (*KeyringStore, error) {
	return nil, errNoKeyring
}

func (s *KeyringStore) Load(server string) (*Grant, error) { return nil, errNoKeyring }
func (s *KeyringStore) Save(g *Grant) error                { return errNoKeyring }
func (s *KeyringStore) Delete(server string) error         { return errNoKeyring }
func (s *KeyringStore) List() ([]string, error)            { return nil, errNoKeyring }
func (s *KeyringStore) String() string                     { return "keyring (not supported on this system)" }
func (s *KeyringStore) Close() error                       { return nil }
