package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/upstream"
)

// proxyOptions carries startup_wait, limits.start_timeout, the retry waits
// and the servers' allow_sampling/allow_elicitation from the config to the
// proxy, defaults and set values alike.
func TestServe_ProxyOptionsFromConfig(t *testing.T) {
	t.Parallel()
	env := config.EnvFunc(func(k string) (string, bool) {
		if k == "HOME" {
			return "/h", true
		}
		return "", false
	})
	const servers = `
[[server]]
name = "fs"
command = ["x"]
[[rule]]
server = "fs"
tool = "*"
class = "read"
action = "allow"
`
	for _, tc := range []struct {
		src                 string
		wait, start         time.Duration
		sampling, elicitate config.Access
		retry               upstream.Backoff
	}{
		{servers, 5 * time.Second, 60 * time.Second, config.AccessDeny, config.AccessDeny, defaultRetry},
		{"startup_wait = \"750ms\"\n[limits]\nstart_timeout = \"3s\"\nretry_wait = \"2s\"\nretry_wait_max = \"3m\"\nrelist_interval = \"5s\"\n" + servers,
			750 * time.Millisecond, 3 * time.Second, config.AccessDeny, config.AccessDeny, upstream.Backoff{Min: 2 * time.Second, Max: 3 * time.Minute, Relist: 5 * time.Second}},
		{servers + "[[server]]\nname = \"b\"\ncommand = [\"y\"]\nallow_sampling = \"ask\"\nallow_elicitation = true\n", 5 * time.Second, 60 * time.Second, config.AccessAsk, config.AccessAllow, defaultRetry},
	} {
		cfg, err := parseConfig(t, tc.src, env)
		if err != nil {
			t.Fatal(err)
		}
		o := proxyOptions(cfg, cli{env: env}, nil)
		if got := upstream.BackoffOf(o.Limits); got != tc.retry {
			t.Errorf("%q: retry %+v, want %+v", tc.src, got, tc.retry)
		}
		if o.StartupWait != tc.wait || o.Limits.StartTimeout != tc.start {
			t.Errorf("%q: startup wait %s start timeout %s, want %s and %s", tc.src, o.StartupWait, o.Limits.StartTimeout, tc.wait, tc.start)
		}
		last := o.Upstreams[len(o.Upstreams)-1]
		a := o.Gate.ClientAccess(last.Name)
		if a.Sampling != tc.sampling || a.Elicitation != tc.elicitate {
			t.Errorf("%q: sampling %v elicitation %v, want %v and %v", tc.src, a.Sampling, a.Elicitation, tc.sampling, tc.elicitate)
		}
		if string(last.Capabilities) != string(a.Capabilities()) {
			t.Errorf("%q: %s offered %s, want %s", tc.src, last.Name, last.Capabilities, a.Capabilities())
		}
	}
}

// defaultRetry is the retry waits of a config that sets none.
var defaultRetry = upstream.Backoff{Min: time.Second, Max: time.Minute, Relist: time.Second}

// parseConfig loads src from a file in a temporary directory, as the
// commands load a config.
func parseConfig(t *testing.T, src string, env config.EnvFunc) (*config.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Load(p, env)
}
