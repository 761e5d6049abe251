package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HTTPOptions configure the host-facing streamable HTTP endpoint.
type HTTPOptions struct {
	// Hosts are the names a request's Host header (and Origin, when a
	// browser sends one) may carry, without port. Loopback names are
	// always allowed.
	Hosts []string
	// Token, when set, must come as "Authorization: Bearer <Token>".
	Token   string
	MaxBody int64         // largest request body; larger gets 413
	IdleTTL time.Duration // a host session idle this long is ended
}

type ctxKey int

// remoteAddrKey is the context key of an HTTP host request's remote
// address.
const remoteAddrKey ctxKey = iota

// ServeHTTP serves hosts over streamable HTTP at /mcp on ln until ctx ends.
// Every request passes guardHTTP first; each host session gets its own
// limits and ledger session.
func (p *Proxy) ServeHTTP(ctx context.Context, ln net.Listener, o HTTPOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.MaxBody <= 0 {
		o.MaxBody = p.opts.Limits.MessageBytes
	}
	if o.IdleTTL <= 0 {
		o.IdleTTL = 30 * time.Minute
	}
	p.hosts.mu.Lock()
	p.hosts.byID = map[string]*hostSession{}
	p.hosts.mu.Unlock()
	p.startSupervisors(ctx)
	go p.watch(ctx)

	e := &httpEndpoint{p: p, ttl: o.IdleTTL}
	go e.sweep(ctx)
	mux := http.NewServeMux()
	mux.Handle("/mcp", guardHTTP(e, o, p.log))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	e.stop(sctx)
	p.hosts.mu.Lock()
	modern := p.hosts.modern
	p.hosts.mu.Unlock()
	if modern != nil && modern.own {
		if err := modern.lease.End(context.Background()); err != nil {
			p.log.Warn("stateless host session end not recorded", "err", err)
		}
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// guardHTTP admits a request only if its Host (and Origin, when present)
// names this machine or an allowed name, it carries the bearer token when
// one is set, and its body is within the cap. A refused request reaches
// no host session and no upstream.
func guardHTTP(next http.Handler, o HTTPOptions, log *slog.Logger) http.Handler {
	allowed := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, h := range o.Hosts {
		allowed[strings.ToLower(h)] = true
	}
	var want [32]byte
	if o.Token != "" {
		want = sha256.Sum256([]byte(o.Token))
	}
	refuse := func(w http.ResponseWriter, r *http.Request, code int, why string) {
		log.Warn("host request refused", "status", code, "why", why, "remote", r.RemoteAddr)
		http.Error(w, "mcp-guard: "+why, code)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[strings.ToLower(hostOnly(r.Host))] {
			refuse(w, r, http.StatusForbidden, "Host header not allowed (DNS rebinding protection); use localhost or pass --allow-host")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !allowed[strings.ToLower(u.Hostname())] {
				refuse(w, r, http.StatusForbidden, "Origin not allowed")
				return
			}
		}
		if o.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			sum := sha256.Sum256([]byte(got))
			if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-guard"`)
				refuse(w, r, http.StatusUnauthorized, "missing or wrong bearer token")
				return
			}
		}
		if r.Body != nil && r.Method == http.MethodPost {
			if r.ContentLength > o.MaxBody {
				refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", o.MaxBody))
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, o.MaxBody))
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe):
				refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", o.MaxBody))
				return
			case err != nil:
				refuse(w, r, http.StatusBadRequest, "could not read the request body")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is a Host header's name without its port or IPv6 brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}
