package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/proxy"
)

// httpFlags are serve's host-facing HTTP flags.
type httpFlags struct {
	addr      string
	tokenFile string
	hosts     multiFlag
	idleTTL   time.Duration
}

// multiFlag is a flag that may be given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// listen binds the host-facing endpoint. An address without a host binds
// 127.0.0.1. One other machines can reach requires a token file, and is
// announced loudly; requests must then name the address (or an
// --allow-host name) in Host.
func (f httpFlags) listen(c cli) (net.Listener, proxy.HTTPOptions, error) {
	var o proxy.HTTPOptions
	host, port, err := net.SplitHostPort(f.addr)
	if err != nil {
		return nil, o, usageErr("serve: --http %q: want HOST:PORT or :PORT (%v)", f.addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if f.idleTTL <= 0 {
		return nil, o, usageErr("serve: --idle-ttl %s: want a positive duration such as 30m", f.idleTTL)
	}
	o.Hosts = append(o.Hosts, f.hosts...)
	o.IdleTTL = f.idleTTL
	if f.tokenFile != "" {
		tok, err := readTokenFile(f.tokenFile)
		if err != nil {
			return nil, o, usageErr("serve: --token-file: %v", err)
		}
		o.Token = tok
	}
	local := loopbackHost(host)
	if !local {
		if o.Token == "" {
			return nil, o, usageErr("serve: --http %s can be reached from other machines; give --token-file so only hosts holding the token can call tools, or bind 127.0.0.1", f.addr)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			o.Hosts = append(o.Hosts, host)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, o, fmt.Errorf("serve: --http: %w", err)
	}
	if !local {
		fmt.Fprintf(c.stderr, "WARNING: mcp-guard serves MCP on %s, which other machines can reach; every request must carry the bearer token from %s, and name an allowed host (%s)\n",
			ln.Addr(), f.tokenFile, strings.Join(append([]string{"localhost"}, o.Hosts...), ", "))
	}
	fmt.Fprintf(c.stderr, "mcp-guard: serving MCP over streamable HTTP at http://%s/mcp\n", ln.Addr())
	return ln, o, nil
}

// readTokenFile reads a secret that only its owner may read.
func readTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s can be read by other users (mode %04o); chmod 600 it", path, fi.Mode().Perm())
	}
	if fi.Size() > 64<<10 {
		return "", fmt.Errorf("%s is over 64 KiB; it should hold one token", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("%s holds %d characters; use a token of at least 16 (e.g. openssl rand -hex 32)", path, len(tok))
	}
	return tok, nil
}

// loopbackHost reports whether host names this machine: "localhost" or a
// loopback IP literal.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
