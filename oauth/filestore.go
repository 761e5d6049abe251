package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// FileStore keeps each Grant in DIR/NAME.json. The directory is created
// 0700 and each file written 0600; a directory or file that another user
// could read or write, or that another user owns, or a link, is refused
// rather than used.
type FileStore struct {
	Dir string
}

// serverNameRE is what a server name may be (the config's rule), so a
// name is always one plain file name.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]{0,30}[A-Za-z0-9])?$`)

// maxGrantBytes bounds a grant file.
const maxGrantBytes = 64 << 10

func (s FileStore) String() string { return s.Dir }

func (s FileStore) path(server string) (string, error) {
	if !serverNameRE.MatchString(server) {
		return "", fmt.Errorf("oauth: %q is not a server name", server)
	}
	return filepath.Join(s.Dir, server+".json"), nil
}

// checkOwnerOnly refuses fi unless it is ours and no one else can read or
// write it.
func checkOwnerOnly(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("oauth: %s is a symbolic link; mcp-guard keeps tokens only in a real file", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("oauth: %s belongs to another user (uid %d)", path, st.Uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("oauth: %s can be read or written by other users (mode %04o); chmod %s it, or remove it and sign in again", path, perm, map[bool]string{true: "700", false: "600"}[fi.IsDir()])
	}
	return nil
}

// dir checks the store's directory, creating it when create is set.
func (s FileStore) dir(create bool) error {
	fi, err := os.Lstat(s.Dir)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
		fi, err = os.Lstat(s.Dir)
	}
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 && !fi.IsDir() {
		return fmt.Errorf("oauth: %s is not a directory", s.Dir)
	}
	return checkOwnerOnly(s.Dir, fi)
}

// Load reads the server's Grant.
func (s FileStore) Load(server string) (*Grant, error) {
	p, err := s.path(server)
	if err != nil {
		return nil, err
	}
	if err := s.dir(false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("oauth: %s: %w", server, ErrNoGrant)
		}
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("oauth: %s: %w", server, ErrNoGrant)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("oauth: %s is not a regular file", p)
	}
	if err := checkOwnerOnly(p, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGrantBytes+1))
	if err != nil {
		return nil, fmt.Errorf("oauth: %s: %w", p, err)
	}
	if len(b) > maxGrantBytes {
		return nil, fmt.Errorf("oauth: %s is over %d bytes", p, maxGrantBytes)
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("oauth: %s: not a grant mcp-guard wrote (%v); remove it and sign in again", p, err)
	}
	if g.Server != server {
		return nil, fmt.Errorf("oauth: %s holds the grant of %q, not %q; remove it and sign in again", p, g.Server, server)
	}
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("oauth: %s: %v; sign in again", p, err)
	}
	return &g, nil
}

// Save writes g atomically: a new file renamed over the old one.
func (s FileStore) Save(g *Grant) error {
	if err := g.check(); err != nil {
		return fmt.Errorf("oauth: save %s: %w", g.Server, err)
	}
	p, err := s.path(g.Server)
	if err != nil {
		return err
	}
	if err := s.dir(true); err != nil {
		return err
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: save %s: %w", g.Server, err)
	}
	f, err := os.CreateTemp(s.Dir, ".grant-*") // 0600
	if err != nil {
		return fmt.Errorf("oauth: save %s: %w", g.Server, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("oauth: save %s: %w", g.Server, err)
	}
	if d, err := os.Open(s.Dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Delete removes the server's Grant.
func (s FileStore) Delete(server string) error {
	p, err := s.path(server)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oauth: %w", err)
	}
	return nil
}

// List names the servers with a grant file.
func (s FileStore) List() ([]string, error) {
	if err := s.dir(false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	var out []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && e.Type().IsRegular() && serverNameRE.MatchString(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}
