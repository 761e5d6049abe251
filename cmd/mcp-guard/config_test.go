package main

import (
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// proxyOptions carries startup_wait, limits.start_timeout and the servers'
// allow_sampling/allow_elicitation from the config to the proxy, defaults
// and set values alike.
func TestServe_ProxyOptionsFromConfig(t *testing.T) {
	env := envFunc(func(k string) (string, bool) {
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
		sampling, elicitate proxy.Access
	}{
		{servers, 5 * time.Second, 60 * time.Second, proxy.AccessDeny, proxy.AccessDeny},
		{"startup_wait = \"750ms\"\n[limits]\nstart_timeout = \"3s\"\n" + servers, 750 * time.Millisecond, 3 * time.Second, proxy.AccessDeny, proxy.AccessDeny},
		{servers + "[[server]]\nname = \"b\"\ncommand = [\"y\"]\nallow_sampling = \"ask\"\nallow_elicitation = true\n", 5 * time.Second, 60 * time.Second, proxy.AccessAsk, proxy.AccessAllow},
	} {
		cfg, err := config.Parse("c.toml", tc.src, env)
		if err != nil {
			t.Fatal(err)
		}
		o := proxyOptions(cfg, env, nil)
		if o.StartupWait != tc.wait || o.Limits.StartTimeout != tc.start {
			t.Errorf("%q: startup wait %s start timeout %s, want %s and %s", tc.src, o.StartupWait, o.Limits.StartTimeout, tc.wait, tc.start)
		}
		a := o.Upstreams[len(o.Upstreams)-1].Access
		if a.Sampling != tc.sampling || a.Elicitation != tc.elicitate {
			t.Errorf("%q: sampling %v elicitation %v, want %v and %v", tc.src, a.Sampling, a.Elicitation, tc.sampling, tc.elicitate)
		}
	}
}
