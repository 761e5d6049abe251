package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// httpTransport carries one upstream's messages over MCP's streamable HTTP
// transport, or over the legacy HTTP+SSE transport when the server speaks
// only that. Redirects are never followed, so the credentials in headers go
// to the configured address and nowhere else; TLS certificates are always
// verified. URLs in errors and logs are shown without userinfo or query.
type httpTransport struct {
	name    string
	url     *url.URL
	headers http.Header
	auth    Authorizer // nil: the headers carry any credential
	client  *http.Client
	log     *slog.Logger
	limits  bounds
	c       *conn

	ctx    context.Context // ends when the transport closes
	cancel context.CancelFunc

	mu       sync.Mutex
	session  string    // Mcp-Session-Id the server assigned at initialize
	version  string    // negotiated protocol version, sent as MCP-Protocol-Version
	postURL  *url.URL  // legacy SSE: where messages go; nil for streamable HTTP
	failures int       // consecutive failures to reach the server
	retryAt  time.Time // no request is sent before this, after failures
	lastErr  error

	inflight map[string]context.CancelFunc     // each request's POST, by ID: 2026-07-28 cancels by ending it
	schema   func(tool string) json.RawMessage // a tool's inputSchema, for its Mcp-Param-* headers (2026-07-28)
}

// newHTTPClient is the client every HTTP upstream uses: certificates
// verified, no redirects, no proxy from the environment, bounded dials.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// startHTTP connects to an HTTP upstream: streamable HTTP first, then, when
// the server answers initialize with a 4xx other than 401/403, legacy SSE at
// the same URL (the spec's backwards-compatibility rule). A server spoken
// to at 2026-07-28 only (protocol = "2026-07-28") is never tried over SSE,
// which that revision does not have; SSE is always spoken legacy.
func startHTTP(ctx context.Context, spec Spec, opts Options) (*Client, error) {
	u, err := connectHTTP(ctx, spec, opts, false)
	var se *StatusError
	if errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && se.Code != 401 && se.Code != 403 && spec.Protocol != ProtocolModern {
		opts.Log.Info("upstream refused a streamable HTTP initialize; trying legacy SSE", "server", spec.Name, "status", se.Code)
		spec.Protocol = ProtocolLegacy
		u, err = connectHTTP(ctx, spec, opts, true)
	}
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	return u, nil
}

func connectHTTP(ctx context.Context, spec Spec, opts Options, legacy bool) (*Client, error) {
	limits := boundsOf(opts.Limits)
	target, err := url.Parse(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	var headers http.Header
	if spec.Header != nil {
		if headers, err = spec.Header(); err != nil {
			return nil, err
		}
	}
	u := newClient(spec, opts)
	t := &httpTransport{name: spec.Name, url: target, headers: headers, auth: spec.Auth, client: newHTTPClient(), log: u.log, limits: limits}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	u.conn = newConn(spec.Name, t.send, u.log)
	t.c = u.conn
	u.conn.onNotify = u.onNotify
	u.conn.onRequest = u.onRequest
	u.setVersion = t.setVersion
	u.relisten = true
	t.schema = u.toolSchema
	u.stop = t.close
	go func() {
		<-u.conn.done
		t.cancel()
		t.client.CloseIdleConnections()
		u.ended(u.conn.Err())
	}()

	ictx, cancel := context.WithTimeout(ctx, limits.StartTimeout)
	defer cancel()
	if legacy {
		if err := t.openSSE(ictx); err != nil {
			u.Close()
			return nil, err
		}
	}
	if err := u.handshake(ictx, spec.Protocol); err != nil {
		u.Close()
		return nil, err
	}
	u.started.Transport = "http"
	switch {
	case legacy:
		u.started.Transport = "sse"
	case u.Modern():
		// 2026-07-28 has no GET stream: the server's list changes come on
		// subscriptions/listen (modern.go).
	default:
		go t.listen()
	}
	return u, nil
}

func (t *httpTransport) setVersion(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

// ShowURL is a URL as it may be shown: no userinfo, no query, no fragment.
func ShowURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// send is the conn's transport. A request is POSTed in the background and
// its answer handed to the conn; notifications and replies are POSTed now.
func (t *httpTransport) send(msg []byte, id string) error {
	if id == "" && t.isModern() {
		if rid := cancelledRequest(msg); rid != "" {
			t.abort(rid) // no session for the notification to reach
			return nil
		}
	}
	if id == "" {
		ctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
		defer cancel()
		resp, err := t.post(ctx, msg)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil
	}
	if err := t.waitBackoff(); err != nil {
		return err
	}
	go t.request(msg, id)
	return nil
}

// request POSTs one request and delivers its answer, from a JSON body or an
// SSE stream. Nothing waits longer than the call timeout: a stream that ends
// or stalls fails the request with the reason.
func (t *httpTransport) request(msg []byte, id string) {
	ctx, cancel := context.WithTimeout(t.ctx, t.limits.CallTimeout+5*time.Second)
	if isListen(msg) {
		// subscriptions/listen lasts as long as the connection.
		cancel()
		ctx, cancel = context.WithCancel(t.ctx)
	}
	defer cancel()
	defer t.track(id, cancel)()
	resp, err := t.post(ctx, msg)
	if err != nil {
		t.c.fail(id, err)
		return
	}
	defer resp.Body.Close()
	t.mu.Lock()
	legacy := t.postURL != nil
	t.mu.Unlock()
	if legacy {
		return // the answer comes on the SSE stream
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.limits.MessageBytes)+1))
		switch {
		case err != nil:
			t.c.fail(id, t.netErr("reading the answer", err))
		case len(body) > t.limits.MessageBytes:
			t.c.fail(id, HostSafef("upstream %q sent an answer over %d bytes (limits.message_bytes)", t.name, t.limits.MessageBytes))
		default:
			t.c.handle(bytes.TrimSpace(body))
		}
	case mt == "text/event-stream":
		var pos streamPos
		r := reopen{b: t.limits.Retry}
		began := time.Now()
		err := t.readAnswer(resp.Body, id, &pos)
		for t.c.waiting(id) && pos.lastID != "" && !t.isModern() {
			// The stream ended or broke before the answer, after the server
			// gave an event ID: it answers on the stream resumed from there
			// (resumability; 2025-11-25's "SSE polling").
			wait := r.next(time.Since(began), pos.retry)
			if err = t.resume(ctx, id, &pos, wait, err); err != nil {
				break
			}
			began = time.Now()
		}
		if err != nil && t.c.waiting(id) {
			t.noteFailure(err)
			t.c.fail(id, t.netErr("the answer stream broke", err))
		}
	case resp.StatusCode == http.StatusAccepted:
		t.c.fail(id, HostSafef("upstream %q accepted the request but sent no answer (HTTP 202)", t.name))
	default:
		t.c.fail(id, fmt.Errorf("upstream %q answered with Content-Type %q, not JSON or an event stream", t.name, safetext.Show(resp.Header.Get("Content-Type"), 80)))
	}
	if t.c.waiting(id) {
		t.c.fail(id, HostSafef("upstream %q: the answer stream ended before the answer; try the call again", t.name))
	}
}

// readAnswer reads an answer stream until the answer to id has arrived or
// the stream ends, handing on every message it carries.
func (t *httpTransport) readAnswer(body io.Reader, id string, pos *streamPos) error {
	return readEvents(body, t.limits.MessageBytes, pos, func(typ string, data []byte) bool {
		if typ == "" || typ == "message" {
			t.c.handle(data)
		}
		return t.c.waiting(id)
	})
}

// resume waits wait (reopen's pace) and reads the answer stream again from
// pos with a GET carrying Last-Event-ID. It fails when the stream cannot
// be resumed; how the resumed stream ended is the next resume's concern.
// The request's deadline bounds every try. broke is how the last stream
// ended.
func (t *httpTransport) resume(ctx context.Context, id string, pos *streamPos, wait time.Duration, broke error) error {
	t.log.Debug("upstream answer stream ended before the answer; resuming it", "after_event", safetext.Show(pos.lastID, 80), "err", broke, "in", wait)
	if !sleep(ctx, wait) {
		return ctx.Err()
	}
	t.mu.Lock()
	sess, ver := t.session, t.version
	t.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url.String(), nil)
	if err != nil {
		return err
	}
	t.header(req, sess, ver)
	if _, err := t.authorize(req); err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", pos.lastID)
	resp, err := t.client.Do(req)
	if err != nil {
		return t.netErr("resuming the answer stream (GET "+ShowURL(t.url)+")", err)
	}
	defer resp.Body.Close()
	if err := t.check(resp, sess); err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return fmt.Errorf("upstream %q answered the resumed stream with Content-Type %q, not an event stream", t.name, safetext.Show(resp.Header.Get("Content-Type"), 80))
	}
	if err := t.readAnswer(resp.Body, id, pos); err != nil {
		t.log.Debug("upstream resumed answer stream broke", "err", err)
	}
	return nil
}

// minResume is the shortest wait before resuming a stream, whatever retry
// time the server sets.
const minResume = 50 * time.Millisecond

// post sends one message and returns the response once its status says the
// server took it.
func (t *httpTransport) post(ctx context.Context, msg []byte) (*http.Response, error) {
	t.mu.Lock()
	target, sess, ver := t.url, t.session, t.version
	if t.postURL != nil {
		target = t.postURL
	}
	t.mu.Unlock()
	// 2026-07-28 has no session: one is never taken from the server
	// (below), so none is sent; mh carries the version.
	var mh http.Header
	var modern bool
	if ver == "" || ver == ProtocolModern { // a legacy session's messages are not read
		mh, modern = modernHeaders(msg, ver == ProtocolModern, t.schema)
	}
	var resp *http.Response
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(msg))
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", t.name, err)
		}
		t.header(req, sess, ver)
		for k, v := range mh {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		tok, err := t.authorize(req)
		if err != nil {
			return nil, err
		}
		resp, err = t.client.Do(req)
		if err != nil {
			err = t.netErr("POST "+ShowURL(target), err)
			t.noteFailure(err)
			t.unreachable(err)
			return nil, err
		}
		if try > 0 {
			break
		}
		// A token refused (expired early, revoked) is renewed, and the
		// request, which the server did not act on, sent once more.
		again, err := t.refused(ctx, resp, tok)
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
		if !again {
			break
		}
		resp.Body.Close()
	}
	if err := t.check(resp, sess); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && sess == "" && !modern {
		if !validSessionID(s) {
			resp.Body.Close()
			return nil, fmt.Errorf("upstream %q assigned a session ID that is not 1-256 visible ASCII characters", t.name)
		}
		t.mu.Lock()
		if t.session == "" {
			t.session = s
		}
		t.mu.Unlock()
	}
	t.noteSuccess()
	return resp, nil
}

// header sets the configured headers (credentials included) and the
// session's.
func (t *httpTransport) header(req *http.Request, sess, ver string) {
	for k, vs := range t.headers {
		req.Header[k] = append([]string(nil), vs...)
	}
	if sess != "" {
		req.Header.Set("Mcp-Session-Id", sess)
	}
	if ver != "" {
		req.Header.Set("MCP-Protocol-Version", ver)
	}
}

// authorize sets the sign-in's bearer token on req, when the server signs
// in, and returns it ("" when it does not).
func (t *httpTransport) authorize(req *http.Request) (string, error) {
	if t.auth == nil {
		return "", nil
	}
	tok, err := t.auth.Token(req.Context())
	if err != nil {
		return "", t.signInErr(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return tok, nil
}

// refused tells the sign-in that resp (HTTP 401) refused tok, and reports
// whether a renewed token is worth one more try.
func (t *httpTransport) refused(ctx context.Context, resp *http.Response, tok string) (bool, error) {
	if t.auth == nil || tok == "" || resp.StatusCode != http.StatusUnauthorized {
		return false, nil
	}
	if err := t.auth.Refused(ctx, tok); err != nil {
		return false, t.signInErr(err)
	}
	return true, nil
}

// signInErr logs why the sign-in gave no token (which may name local
// files) and is what the host is told.
func (t *httpTransport) signInErr(err error) error {
	t.log.Warn("upstream sign-in has no token to send", "err", err)
	return &SignInError{Server: t.name}
}

// check turns an HTTP status mcp-guard cannot use into an error that says
// what happened. A 404 on an established session ends the connection: the
// server forgot the session, and only a new initialize can continue.
func (t *httpTransport) check(resp *http.Response, sess string) error {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code >= 300 && code < 400:
		loc := "an unnamed address"
		if l, err := resp.Location(); err == nil {
			loc = ShowURL(l)
		}
		return &StatusError{code, fmt.Sprintf("upstream %q answered HTTP %d, a redirect to %s; mcp-guard never follows redirects, so credentials stay with the configured address: set url to the final address if you trust it", t.name, code, safetext.Show(loc, 200)), false}
	case code == http.StatusNotFound && sess != "":
		err := fmt.Errorf("upstream %q ended the session (HTTP 404); it will be connected again", t.name)
		go t.c.close(err)
		return &StatusError{code, err.Error(), true}
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && t.auth != nil:
		return &StatusError{code, fmt.Sprintf("upstream %q refused the token of mcp-guard's sign-in (HTTP %d); the operator runs `mcp-guard auth %s`", t.name, code, t.name), true}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return &StatusError{code, fmt.Sprintf("upstream %q refused mcp-guard's credentials (HTTP %d); check token_env, token_file or headers", t.name, code), true}
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	err := &StatusError{code, fmt.Sprintf("upstream %q answered HTTP %d: %s", t.name, code, safetext.Show(string(bytes.TrimSpace(snippet)), 200)), true}
	if code >= 500 {
		t.noteFailure(err)
	}
	return err
}

// netErr describes a failed exchange without the URL the http package puts
// in its errors (it may carry a key in its query).
func (t *httpTransport) netErr(what string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("upstream %q: %s: no answer in time", t.name, what)
	}
	return fmt.Errorf("upstream %q: %s: %w", t.name, what, err)
}

// unreachable ends the connection when err says nothing listens at the
// server's address any more (it stopped or moved): its tools are withdrawn
// and the supervisor connects it again, with backoff, initializing a new
// session. It reports whether it did.
func (t *httpTransport) unreachable(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return false
	}
	go t.c.close(fmt.Errorf("%w; it will be connected again", err))
	return true
}

// noteFailure starts or lengthens the backoff: after n failures in a row no
// request goes out for min(250ms·2ⁿ, 30s), and calls fail at once saying so.
func (t *httpTransport) noteFailure(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures++
	d := 30 * time.Second
	if t.failures < 8 {
		d = min(d, 250*time.Millisecond<<t.failures)
	}
	t.retryAt = time.Now().Add(d)
	t.lastErr = err
}

func (t *httpTransport) noteSuccess() {
	t.mu.Lock()
	t.failures, t.retryAt, t.lastErr = 0, time.Time{}, nil
	t.mu.Unlock()
}

func (t *httpTransport) waitBackoff() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wait := time.Until(t.retryAt); wait > 0 {
		t.log.Debug("upstream in backoff", "last", t.lastErr)
		return HostSafef("upstream %q failed %d times in a row; mcp-guard tries again in %s (the operator's log has the last failure)", t.name, t.failures, wait.Round(100*time.Millisecond))
	}
	return nil
}

// listen keeps the standalone GET stream open for what the server sends
// outside a request (tools/list_changed). A server without one answers 405.
// When the server gives event IDs, the stream is resumed from the last one
// (Last-Event-ID). A stream that ends is opened again as reopen paces it.
func (t *httpTransport) listen() {
	r := reopen{b: t.limits.Retry}
	var pos streamPos
	for t.ctx.Err() == nil {
		began := time.Now()
		stop, err := t.getStream(&pos)
		if stop {
			return
		}
		wait := r.next(time.Since(began), pos.retry)
		t.log.Debug("upstream event stream ended; opening it again", "err", err, "in", wait)
		if !sleep(t.ctx, wait) {
			return
		}
	}
}

// getStream reads one standalone GET stream until it ends, resuming from
// pos. stop says not to open another.
func (t *httpTransport) getStream(pos *streamPos) (stop bool, err error) {
	t.mu.Lock()
	sess, ver := t.session, t.version
	t.mu.Unlock()
	req, err := http.NewRequestWithContext(t.ctx, http.MethodGet, t.url.String(), nil)
	if err != nil {
		return true, err
	}
	t.header(req, sess, ver)
	req.Header.Set("Accept", "text/event-stream")
	if pos.lastID != "" {
		req.Header.Set("Last-Event-ID", pos.lastID)
	}
	tok, err := t.authorize(req)
	if err != nil {
		return false, err // tried again as the stream would be
	}
	resp, err := t.client.Do(req)
	if err != nil {
		err = t.netErr("GET "+ShowURL(t.url), err)
		return t.unreachable(err), err
	}
	defer resp.Body.Close()
	if again, err := t.refused(t.ctx, resp, tok); again || err != nil {
		return false, err // the next open sends the renewed token
	}
	if resp.StatusCode == http.StatusMethodNotAllowed {
		t.log.Debug("upstream has no event stream; it cannot announce tool changes outside a request")
		return true, nil
	}
	if err := t.check(resp, sess); err != nil {
		return resp.StatusCode == http.StatusNotFound, err
	}
	err = readEvents(resp.Body, t.limits.MessageBytes, pos, func(typ string, data []byte) bool {
		if typ == "" || typ == "message" {
			t.c.handle(data)
		}
		return true
	})
	return false, err
}

// openSSE opens the legacy SSE stream and waits for its endpoint event. The
// endpoint must be on the same origin as url: credentials are never sent to
// an address the server names.
func (t *httpTransport) openSSE(ctx context.Context) error {
	req, err := http.NewRequestWithContext(t.ctx, http.MethodGet, t.url.String(), nil)
	if err != nil {
		return err
	}
	t.header(req, "", "")
	if _, err := t.authorize(req); err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := t.client.Do(req)
		done <- result{resp, err}
	}()
	var resp *http.Response
	select {
	case r := <-done:
		if r.err != nil {
			return t.netErr("GET "+ShowURL(t.url), r.err)
		}
		resp = r.resp
	case <-ctx.Done():
		t.c.close(ErrClosed)
		return fmt.Errorf("upstream %q: GET %s: no answer in time", t.name, ShowURL(t.url))
	}
	if err := t.check(resp, ""); err != nil {
		resp.Body.Close()
		return err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return fmt.Errorf("upstream %q answered neither streamable HTTP nor legacy SSE (GET gave Content-Type %q)", t.name, safetext.Show(resp.Header.Get("Content-Type"), 80))
	}
	endpoint := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		sent := false
		err := readEvents(resp.Body, t.limits.MessageBytes, nil, func(typ string, data []byte) bool {
			switch typ {
			case "endpoint":
				if !sent {
					endpoint <- string(data)
					sent = true
				}
			case "", "message":
				t.c.handle(data)
			}
			return true
		})
		if err == nil {
			err = errors.New("the server closed it")
		}
		t.c.close(fmt.Errorf("upstream %q: the SSE stream ended (%v); it will be connected again", t.name, t.netErr("stream", err)))
	}()
	select {
	case e := <-endpoint:
		ref, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("upstream %q: the SSE endpoint event is not a URL: %w", t.name, err)
		}
		post := t.url.ResolveReference(ref)
		if post.Scheme != t.url.Scheme || post.Host != t.url.Host {
			return fmt.Errorf("upstream %q: the SSE endpoint event names another origin (%s); mcp-guard sends credentials only to %s", t.name, safetext.Show(ShowURL(post), 200), ShowURL(t.url))
		}
		t.mu.Lock()
		t.postURL = post
		t.mu.Unlock()
		return nil
	case <-t.c.done:
		return t.c.Err()
	case <-ctx.Done():
		return fmt.Errorf("upstream %q: the SSE stream sent no endpoint event in time", t.name)
	}
}

// close ends the session (DELETE, best effort) and the connection.
func (t *httpTransport) close() {
	t.mu.Lock()
	sess, ver, legacy := t.session, t.version, t.postURL != nil
	t.mu.Unlock()
	if sess != "" && !legacy && t.c.Err() == nil {
		ctx, cancel := context.WithTimeout(t.ctx, 2*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url.String(), nil)
		if err == nil {
			t.header(req, sess, ver)
			t.authorize(req) // best effort, as the DELETE is
			if resp, err := t.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	t.c.close(ErrClosed)
}

// validSessionID reports whether s is what the spec allows: visible ASCII.
func validSessionID(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return true
}
