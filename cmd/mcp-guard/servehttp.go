package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
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

// check validates the HTTP flags (each problem a usage error) without
// binding anything: serve calls it before it opens the ledger or starts an
// upstream. An address without a host means 127.0.0.1. One other machines
// can reach requires a token file; requests must then name the address (or
// an --allow-host name) in Host.
func (f httpFlags) check() (addr string, o proxy.HTTPOptions, err error) {
	host, port, err := net.SplitHostPort(f.addr)
	if err != nil {
		return "", o, usageErr("serve: --http %q: want HOST:PORT or :PORT, e.g. --http 127.0.0.1:8080 (%v)", f.addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", o, usageErr("serve: --http %q: the port %q is not a number from 0 to 65535 (0: any free port)", f.addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if f.idleTTL <= 0 {
		return "", o, usageErr("serve: --idle-ttl %s: want a positive duration such as 30m", f.idleTTL)
	}
	o.Hosts = append(o.Hosts, f.hosts...)
	o.IdleTTL = f.idleTTL
	if f.tokenFile != "" {
		tok, err := readTokenFile(f.tokenFile)
		if err != nil {
			return "", o, usageErr("serve: --token-file: %v", err)
		}
		o.Token = tok
	}
	if !loopbackHost(host) {
		if o.Token == "" {
			return "", o, usageErr("serve: --http %s can be reached from other machines; give --token-file so only hosts holding the token can call tools, or bind 127.0.0.1", f.addr)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			o.Hosts = append(o.Hosts, host)
		}
	}
	return net.JoinHostPort(host, port), o, nil
}

// listen checks the flags and binds the host-facing endpoint; an address
// that cannot be bound is a usage error too: nothing has started yet.
func (f httpFlags) listen() (net.Listener, proxy.HTTPOptions, error) {
	addr, o, err := f.check()
	if err != nil {
		return nil, o, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, o, usageErr("serve: --http %s: cannot listen there (%v); pick a free port on this machine, or :0 for any", f.addr, err)
	}
	return ln, o, nil
}

// announce says where the endpoint is, loudly when other machines can
// reach it.
func (f httpFlags) announce(c cli, ln net.Listener, o proxy.HTTPOptions) {
	if !loopbackAddr(ln.Addr()) {
		fmt.Fprintf(c.stderr, "WARNING: mcp-guard serves MCP on %s, which other machines can reach; every request must carry the bearer token from %s, and name an allowed host (%s)\n",
			ln.Addr(), f.tokenFile, strings.Join(append([]string{"localhost"}, o.Hosts...), ", "))
	}
	fmt.Fprintf(c.stderr, "mcp-guard: serving MCP over streamable HTTP at http://%s/mcp\n", ln.Addr())
}

// loopbackAddr reports whether a bound address is a loopback one.
func loopbackAddr(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// readTokenFile reads a secret that only its owner may read.
func readTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist: put a token of at least 16 characters there, readable only by you (e.g. openssl rand -hex 32 > %s; chmod 600 %s)", path, path, path)
	}
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
