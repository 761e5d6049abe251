package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func testGrant(server string) *Grant {
	return &Grant{Server: server, Resource: "https://mcp.example.com/mcp", Issuer: "https://auth.example.com/",
		TokenURL: "https://auth.example.com/token", ClientID: "c1", AccessToken: "at-" + server, RefreshToken: "rt-" + server,
		Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Scopes: []string{"mcp"}, SignedIn: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// A grant is saved owner-only under any umask, read back whole, listed
// and deleted.
func TestFileStore_RoundTripOwnerOnly(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := FileStore{Dir: filepath.Join(t.TempDir(), "state", "auth")}
	if _, err := s.Load("gh"); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("load before any sign-in: %v, want ErrNoGrant", err)
	}
	if names, err := s.List(); err != nil || len(names) != 0 {
		t.Fatalf("list of a store never written: %v %v", names, err)
	}
	for _, name := range []string{"gh", "linear"} {
		if err := s.Save(testGrant(name)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.Load("gh")
	if err != nil || g.AccessToken != "at-gh" || g.RefreshToken != "rt-gh" || !g.Expiry.Equal(testGrant("gh").Expiry) || g.Issuer != "https://auth.example.com/" {
		t.Fatalf("load: %+v %v", g, err)
	}
	for p, want := range map[string]os.FileMode{s.Dir: 0o700, filepath.Join(s.Dir, "gh.json"): 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %04o", p, fi.Mode().Perm(), err, want)
		}
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
}

// What another user could read or plant is refused, naming the file and
// what to do.
func TestFileStore_RefusesWhatOthersCanReach(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s FileStore)
		want  string
	}{
		{"a group-readable grant", func(t *testing.T, s FileStore) { os.Chmod(filepath.Join(s.Dir, "gh.json"), 0o640) }, "mode 0640"},
		{"a world-readable directory", func(t *testing.T, s FileStore) { os.Chmod(s.Dir, 0o755) }, "mode 0755"},
		{"a grant that is a link", func(t *testing.T, s FileStore) {
			p := filepath.Join(s.Dir, "gh.json")
			os.Rename(p, p+".real")
			os.Symlink(p+".real", p)
		}, "symbolic link"},
		{"another server's grant under this name", func(t *testing.T, s FileStore) {
			os.Rename(filepath.Join(s.Dir, "other.json"), filepath.Join(s.Dir, "gh.json"))
		}, `grant of "other"`},
		{"a file that is not a grant", func(t *testing.T, s FileStore) {
			os.WriteFile(filepath.Join(s.Dir, "gh.json"), []byte("{"), 0o600)
		}, "not a grant"},
		{"a grant without a token", func(t *testing.T, s FileStore) {
			os.WriteFile(filepath.Join(s.Dir, "gh.json"), []byte(`{"server":"gh","resource":"r","issuer":"i","token_url":"t","client_id":"c"}`), 0o600)
		}, "no access token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := FileStore{Dir: filepath.Join(t.TempDir(), "auth")}
			if err := s.Save(testGrant("gh")); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(testGrant("other")); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, s)
			g, err := s.Load("gh")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("load: %+v, %v; want an error saying %q", g, err, tt.want)
			}
			if g != nil || (err != nil && strings.Contains(err.Error(), "at-")) {
				t.Fatalf("the error or result carries the token: %v", err)
			}
		})
	}
}

// Names that are not server names never become paths.
func TestFileStore_RefusesNamesThatAreNotServers(t *testing.T) {
	s := FileStore{Dir: filepath.Join(t.TempDir(), "auth")}
	if err := s.Save(testGrant("gh")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "../x", "a/b", ".hidden", "x.json"} {
		if _, err := s.Load(name); err == nil || !strings.Contains(err.Error(), "not a server name") {
			t.Errorf("load %q: %v, want refused as not a server name", name, err)
		}
		if err := s.Save(testGrant(name)); err == nil || !strings.Contains(err.Error(), "server name") {
			t.Errorf("save %q: %v, want refused", name, err)
		}
	}
}
