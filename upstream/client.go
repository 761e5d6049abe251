package upstream

import (
	"io"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/sandbox"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the MCP revision mcp-guard offers its upstreams.
const ProtocolVersion = "2025-11-25"

// acceptedVersions are the revisions an upstream may answer with.
var acceptedVersions = map[string]bool{
	"2025-11-25": true,
	"2025-06-18": true,
	"2025-03-26": true,
	"2024-11-05": true,
}

// Spec says how to reach one upstream: a command mcp-guard starts
// (stdio), or a URL (streamable HTTP, falling back to legacy SSE).
type Spec struct {
	Name    string
	Command []string
	Env     []string // the child's whole environment, KEY=VALUE
	Dir     string

	URL string
	// Header returns the headers sent with every HTTP request: credentials,
	// read at each connect so a rotated token file is picked up. Never logged.
	Header func() (http.Header, error)
	// Auth, when set, gives the bearer token of a server that signs in
	// (OAuth), asked before each request and told when one is refused.
	Auth Authorizer

	// Dial, when set (and Command and URL are not), connects to a server
	// in this process, spoken to as a stdio child: an embedded server, or
	// a test's fake.
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)

	// Capabilities is the client capabilities object offered at
	// initialize (gate.ClientAccess.Capabilities): what the server may ask
	// of the host; nothing ({}) when nil. Whether one request is taken up
	// is Hooks.Admit's to say.
	Capabilities json.RawMessage
	// TrustNewTools pins (and exposes) what the server adds after its
	// first listing at once, as at first contact, instead of holding it for
	// "mcp-guard pin accept". Only with pin mode tofu. The proxy reads it;
	// the client does not.
	TrustNewTools bool

	// Sandbox, when set, starts a stdio server through the sandbox
	// launcher, confined to its policy.
	Sandbox *Sandbox

	// Protocol is how the session starts: ProtocolLegacy ("" too),
	// ProtocolModern or ProtocolAuto (modern.go).
	Protocol string
}

// Authorizer gives a url server's bearer token (package oauth's Source).
// Its errors say what the operator must do (sign in) and show no token.
type Authorizer interface {
	// Token is the token to send now.
	Token(ctx context.Context) (string, error)
	// Refused is told that the server refused token (HTTP 401); the next
	// Token gives a renewed one, or Refused says why there is none.
	Refused(ctx context.Context, token string) error
}

// Sandbox is how a stdio server is confined (sandbox).
type Sandbox struct {
	Launcher string         // the mcp-guard binary, run as "sandbox-exec"
	Policy   sandbox.Policy // as configured; the runtime defaults are added at each start
	Home     string         // mcp-guard's $HOME, for the package caches it may read
	// ABIMax > 0 makes the start and the launcher act as if the kernel's
	// Landlock ABI were at most ABIMax (tests of the fail-closed path).
	ABIMax int
}

// bounds are the limits one Client works within: config.Limits, read once
// into the types the transports count in.
type bounds struct {
	MessageBytes int           // longest line an upstream may send
	CallTimeout  time.Duration // a tools/call or another forwarded request
	StartTimeout time.Duration // spawn and initialize
	ListPages    int           // list pages walked at most
	ListBytes    int           // list bytes read at most, all pages together
	StderrBytes  int64         // per-server stderr log size before it rotates
	Retry        Backoff       // how often a server may make mcp-guard reopen its stream
}

func boundsOf(l config.Limits) bounds {
	return bounds{MessageBytes: int(l.MessageBytes), CallTimeout: l.CallTimeout, StartTimeout: l.StartTimeout,
		ListPages: int(l.ListPages), ListBytes: int(l.ListBytes), StderrBytes: l.StderrBytes, Retry: BackoffOf(l)}
}

// Hooks are how a Client hands the host side what it cannot answer itself.
// Each may be nil.
type Hooks struct {
	// Admit says whether a roots/list, sampling/createMessage or
	// elicitation/create the server sends is taken up (given to Relay) or
	// refused at once with -32601: the gate's decision (gate.AdmitsClient).
	// It runs on the read loop and must not block. nil admits nothing.
	Admit func(method string) bool
	// Relay answers a request Admit took up. It runs in its own
	// goroutine; an *RPCError it returns goes back to the server with its
	// code, any other error as an internal error.
	Relay func(method string, params json.RawMessage) (json.RawMessage, error)
	// Refused is told of a request refused because Admit did not take it
	// up (the server already got its -32601). It runs on the read loop and
	// must not block.
	Refused func(method string, params json.RawMessage)
	// Log receives the params of each notifications/message. It runs on
	// the read loop and must not block.
	Log func(params json.RawMessage)
}

// Options configure Start.
type Options struct {
	Limits  config.Limits // every field set (config.DefaultLimits)
	LogDir  string        // a stdio server's stderr goes to LogDir/<name>.stderr.log
	Version string        // mcp-guard's, sent as clientInfo.version
	Log     *slog.Logger
	Hooks   Hooks
	// Redact, when set, rewrites each line a stdio server writes to its
	// stderr before it reaches the log file (the credentials mcp-guard
	// holds are never stored there).
	Redact func([]byte) []byte
}

// ContentCaps is what an upstream offers besides tools, read from its
// initialize result.
type ContentCaps struct {
	Prompts, Resources, Subscribe bool
}

// Client is one connected server, over stdio or HTTP.
type Client struct {
	name   string
	log    *slog.Logger
	limits bounds
	conn   *conn
	stop   func() // ends the transport (and the process); dead closes after it

	version         string // mcp-guard's, sent as clientInfo.version
	protocolVersion string
	meta            json.RawMessage // the stateless protocol's _meta for each request; nil for a legacy server
	instructions    []byte          // raw JSON string the server sent in initialize; "" when none
	hasTools        bool
	content         ContentCaps   // prompts and resources it offers
	updated         chan string   // URIs of notifications/resources/updated
	listChanged     chan struct{} // the server said its tools changed (coalesced)
	setVersion      func(string)  // tells the transport the negotiated version, if it cares

	relisten bool         // subscriptions/listen is sent again when it ends (HTTP: a stream can break)
	acks     atomic.Int32 // subscriptions/acknowledged received

	schemaMu sync.Mutex
	schemas  map[string]json.RawMessage // each tool's inputSchema at the latest tools/list (2026-07-28 HTTP headers)

	caps       json.RawMessage // offered at initialize (offered: {} when nil)
	hooks      Hooks
	hasLogging bool // it declared the logging capability

	callers callers // requests in flight (callers.go)

	progressSeq atomic.Uint64
	progressMu  sync.Mutex
	progress    map[string]func(params json.RawMessage)

	closing atomic.Bool   // set by Close: the end is expected
	dead    chan struct{} // closed when the connection (and the process) have ended
	deadErr error

	started StartInfo
}

// StartInfo is how a connection to an upstream was made.
type StartInfo struct {
	Transport   string   // "stdio", "http" (streamable), "sse" (legacy) or "pipe" (Spec.Dial)
	PID         int      // a stdio server's process (the sandbox launcher execs it: the same pid)
	Sandbox     string   // the effective sandbox policy's digest; "" when the server is not sandboxed
	LandlockABI int      // the Landlock ABI a sandboxed server was started under
	NotEnforced []string // what a best-effort sandbox could not enforce on this kernel
}

// Started says how the connection was made.
func (u *Client) Started() StartInfo { return u.started }

func newClient(spec Spec, opts Options) *Client {
	return &Client{
		version:     opts.Version,
		name:        spec.Name,
		log:         opts.Log.With("server", spec.Name),
		limits:      boundsOf(opts.Limits),
		progress:    make(map[string]func(json.RawMessage)),
		dead:        make(chan struct{}),
		listChanged: make(chan struct{}, 1),
		caps:        spec.Capabilities,
		hooks:       opts.Hooks,
		updated:     make(chan string, 64),
	}
}

// Start connects to the server (spawning it for stdio), initializes it and
// returns once it is ready for its listings.
func Start(ctx context.Context, spec Spec, opts Options) (*Client, error) {
	if err := opts.Limits.Check(); err != nil {
		return nil, fmt.Errorf("upstream: start %s: %w", spec.Name, err)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	var u *Client
	var err error
	switch {
	case spec.URL != "":
		u, err = startHTTP(ctx, spec, opts)
	case spec.Dial != nil && len(spec.Command) == 0:
		u, err = startPipe(ctx, spec, opts)
	default:
		u, err = startStdio(ctx, spec, opts)
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("server %q did not answer initialize within %s (limits.start_timeout)", spec.Name, opts.Limits.StartTimeout)
	}
	return u, err
}

// Name is the server's configured name.
func (u *Client) Name() string { return u.name }

// Instructions is the raw JSON string the server sent in initialize, `""`
// when it sent none.
func (u *Client) Instructions() []byte { return u.instructions }

// Content is what the server offers besides tools.
func (u *Client) Content() ContentCaps { return u.content }

// HasLogging reports whether the server declared the logging capability.
func (u *Client) HasLogging() bool { return u.hasLogging }

// ListChanged receives (coalesced) when the server says its tools, prompts
// or resources changed.
func (u *Client) ListChanged() <-chan struct{} { return u.listChanged }

// Updated receives the URIs of the server's notifications/resources/updated;
// when nobody takes them, the 65th waiting is dropped, never blocking.
func (u *Client) Updated() <-chan string { return u.updated }

// Done is closed when the connection (and, for stdio, the process group)
// has ended, for whatever reason.
func (u *Client) Done() <-chan struct{} { return u.dead }

// Err is why the upstream ended (an *EndedError); valid once Done is closed.
func (u *Client) Err() error { return u.deadErr }

// ended records why the upstream is gone and wakes everyone waiting on it.
func (u *Client) ended(err error) {
	if err == nil {
		err = ErrClosed
	}
	if _, ok := err.(*EndedError); !ok {
		err = &EndedError{Err: err}
	}
	u.deadErr = err
	if u.closing.Load() {
		u.log.Debug("upstream stopped", "reason", err)
	} else {
		u.log.Warn("upstream ended", "reason", err)
	}
	close(u.dead)
}

// Close stops the upstream (for stdio, its whole process group).
func (u *Client) Close() {
	u.closing.Store(true)
	u.stop()
	<-u.dead
}

// call sends one request and maps a broken connection to a clear reason.
func (u *Client) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := u.conn.Call(ctx, method, u.withMeta(params))
	return res, u.why(ctx, err)
}

// why explains a failed request: when the connection ended (and not the
// caller's context), it is the reason the upstream is gone, once known.
func (u *Client) why(ctx context.Context, err error) error {
	if err == nil || u.conn.Err() == nil || ctx.Err() != nil {
		return err
	}
	select {
	case <-u.dead:
		return u.deadErr
	case <-time.After(2 * time.Second):
		return fmt.Errorf("upstream %q: %w", u.name, u.conn.Err())
	}
}

func (u *Client) initialize(ctx context.Context) error {
	params := `{"protocolVersion":"` + ProtocolVersion + `","capabilities":` + string(offered(u.caps)) + `,"clientInfo":{"name":"mcp-guard","version":` + string(jsonString(u.version)) + `}}`
	res, err := u.call(ctx, "initialize", json.RawMessage(params))
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools   json.RawMessage `json:"tools"`
			Logging json.RawMessage `json:"logging"`
		} `json:"capabilities"`
		Instructions json.RawMessage `json:"instructions"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("initialize: bad result: %w", err)
	}
	if !acceptedVersions[r.ProtocolVersion] {
		return fmt.Errorf("initialize: upstream answered protocol version %q, which mcp-guard does not speak (it offers %s)", r.ProtocolVersion, ProtocolVersion)
	}
	u.protocolVersion = r.ProtocolVersion
	if u.setVersion != nil {
		u.setVersion(r.ProtocolVersion)
	}
	u.instructions = []byte(`""`)
	if len(r.Instructions) > 0 && string(r.Instructions) != "null" {
		var s string
		if err := json.Unmarshal(r.Instructions, &s); err != nil {
			return fmt.Errorf("initialize: instructions is not a string")
		}
		u.instructions = r.Instructions
	}
	u.hasTools = len(r.Capabilities.Tools) > 0 && string(r.Capabilities.Tools) != "null"
	u.hasLogging = len(r.Capabilities.Logging) > 0 && string(r.Capabilities.Logging) != "null"
	u.content = parseContentCaps(res)
	if err := u.conn.Notify("notifications/initialized", nil); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	return nil
}

// HasTools reports whether the server declared the tools capability; a
// server without it is not asked for tools/list.
func (u *Client) HasTools() bool { return u.hasTools }

// List walks every page of one listing (tools/list, prompts/list, ...),
// refusing cursor loops and results over the page and byte caps. page is
// given each page's raw result and returns its nextCursor ("" on the last
// page); its error ends the walk as it is.
func (u *Client) List(ctx context.Context, method string, page func(res json.RawMessage) (next string, err error)) error {
	seen := map[string]bool{}
	cursor, total := "", 0
	var schemas map[string]json.RawMessage
	if method == "tools/list" && u.Modern() {
		schemas = map[string]json.RawMessage{}
	}
	for n := 0; ; n++ {
		if n == u.limits.ListPages {
			return fmt.Errorf("%s: more than %d pages", method, u.limits.ListPages)
		}
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params = json.RawMessage(`{"cursor":` + string(jsonString(cursor)) + `}`)
		}
		res, err := u.call(ctx, method, params)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		total += len(res)
		if total > u.limits.ListBytes {
			return fmt.Errorf("%s: results over %d bytes", method, u.limits.ListBytes)
		}
		next, err := page(res)
		if err != nil {
			return err
		}
		if schemas != nil {
			toolSchemas(res, schemas)
		}
		if next == "" {
			if schemas != nil {
				u.schemaMu.Lock()
				u.schemas = schemas
				u.schemaMu.Unlock()
			}
			return nil
		}
		if seen[next] {
			return fmt.Errorf("%s: cursor %q repeated", method, next)
		}
		seen[next] = true
		cursor = next
	}
}

// Call sends one request with params exactly as given and waits for its
// answer, bounded only by ctx.
func (u *Client) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return u.call(ctx, method, params)
}

// Request forwards one request other than tools/call within the call
// timeout; when ctx is cancelled, late (when set) later receives the
// upstream's answer.
func (u *Client) Request(ctx context.Context, method string, params json.RawMessage, late func(json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, u.limits.CallTimeout)
	defer cancel()
	defer u.callers.add(ctx)()
	var res json.RawMessage
	var err error
	if params = u.withMeta(params); u.meta != nil && inputMethods[method] {
		// A 2026-07-28 server may ask for input here too: relayed and
		// retried as during a tools/call.
		p := bytes.TrimRight(params, " \t\r\n")
		if len(p) == 0 || p[len(p)-1] != '}' {
			return nil, fmt.Errorf("%s: params are not a JSON object", method)
		}
		res, err = u.callRounds(ctx, method, p[:len(p)-1], late)
	} else {
		res, err = u.conn.CallLate(ctx, method, params, u.limits.CallTimeout, late)
	}
	if err = u.why(ctx, err); errors.Is(err, context.DeadlineExceeded) {
		return nil, HostSafef("upstream %q did not answer within %s (limits.call_timeout)", u.name, u.limits.CallTimeout)
	}
	if _, _, ask := inputRequired(res); err == nil && ask && u.meta != nil {
		return nil, HostSafef("upstream %q asked for the host's input during %s; mcp-guard relays that only during tools/call, prompts/get and resources/read", u.name, method)
	}
	return res, err
}

// GetPrompt forwards one prompts/get of prompt, as Request does. args are
// sent exactly as given (nil: no arguments member).
func (u *Client) GetPrompt(ctx context.Context, prompt string, args json.RawMessage, late func(json.RawMessage, error)) (json.RawMessage, error) {
	params := []byte(`{"name":` + string(jsonString(prompt)))
	if args != nil {
		params = append(append(params, `,"arguments":`...), args...)
	}
	return u.Request(ctx, "prompts/get", append(params, '}'), late)
}

// ReadResource forwards one resources/read of uri, as Request does.
func (u *Client) ReadResource(ctx context.Context, uri string, late func(json.RawMessage, error)) (json.RawMessage, error) {
	return u.Request(ctx, "resources/read", []byte(`{"uri":`+string(jsonString(uri))+`}`), late)
}

// Reason explains a failed request: when the connection ended (and not
// ctx), it is the reason the upstream is gone, once known; otherwise err.
func (u *Client) Reason(ctx context.Context, err error) error { return u.why(ctx, err) }

// CallTool forwards one tools/call. args are sent exactly as given (nil: no
// arguments member). onProgress, when set, receives the params of each
// progress notification the upstream sends for this call. When ctx is
// cancelled, late (when set) later receives the upstream's answer, if it
// comes within the call timeout.
func (u *Client) CallTool(ctx context.Context, tool string, args json.RawMessage, onProgress func(json.RawMessage), late func(json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, u.limits.CallTimeout)
	defer cancel()
	defer u.callers.add(ctx)()
	params := []byte(`{"name":` + string(jsonString(tool)))
	if args != nil {
		params = append(append(params, `,"arguments":`...), args...)
	}
	if onProgress != nil {
		token := "p-" + strconv.FormatUint(u.progressSeq.Add(1), 10)
		u.progressMu.Lock()
		u.progress[token] = onProgress
		u.progressMu.Unlock()
		defer func() {
			u.progressMu.Lock()
			delete(u.progress, token)
			u.progressMu.Unlock()
		}()
		meta := `{"progressToken":"` + token + `"}`
		if u.meta != nil {
			meta = `{"progressToken":"` + token + `",` + string(u.meta[1:])
		}
		params = append(params, `,"_meta":`+meta...)
	} else if u.meta != nil {
		params = append(params, `,"_meta":`+string(u.meta)...)
	}
	res, err := u.callRounds(ctx, "tools/call", params, late)
	if err = u.why(ctx, err); errors.Is(err, context.DeadlineExceeded) {
		return nil, HostSafef("upstream %q did not answer within %s (limits.call_timeout)", u.name, u.limits.CallTimeout)
	}
	return res, err
}

// onNotify runs on the read loop: it must not block.
func (u *Client) onNotify(method string, params json.RawMessage) {
	if u.contentNotify(method, params) {
		return
	}
	switch method {
	case "notifications/progress":
		var p struct {
			Token json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		var token string
		if json.Unmarshal(p.Token, &token) != nil {
			return
		}
		u.progressMu.Lock()
		f := u.progress[token]
		u.progressMu.Unlock()
		if f != nil {
			f(params)
		}
	case "notifications/message":
		u.log.Debug("upstream log message", "params", truncate(string(params), 2048))
		if u.hooks.Log != nil {
			u.hooks.Log(params)
		}
	case "notifications/tools/list_changed":
		select {
		case u.listChanged <- struct{}{}:
		default: // one is already pending
		}
	case "notifications/subscriptions/acknowledged":
		if u.acks.Add(1) > 1 {
			// Listening again after a broken listen: what changed in
			// between was not announced, so everything is listed again.
			select {
			case u.listChanged <- struct{}{}:
			default:
			}
		}
	default:
		u.log.Debug("upstream notification ignored", "method", method)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
