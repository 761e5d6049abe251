package proxy

import (
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

	"github.com/mcp-guard/mcp-guard/pin"
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

// UpstreamSpec says how to reach one upstream: a command mcp-guard starts
// (stdio), or a URL (streamable HTTP, falling back to legacy SSE).
type UpstreamSpec struct {
	Name    string
	Command []string
	Env     []string // the child's whole environment, KEY=VALUE
	Dir     string

	URL string
	// Header returns the headers sent with every HTTP request: credentials,
	// read at each connect so a rotated token file is picked up. Never logged.
	Header func() (http.Header, error)

	// Access is what the server may ask of the host (sampling, elicitation,
	// roots); nothing by default.
	Access ClientAccess
	// TrustNewTools pins (and exposes) what the server adds after its
	// first listing at once, as at first contact, instead of holding it for
	// "mcp-guard pin accept". Only with pin mode tofu.
	TrustNewTools bool
	// relay and refused are set by the Proxy (clientreq.go).
	relay   func(u *upstream, method string, params json.RawMessage) (json.RawMessage, error)
	refused func(u *upstream, method string, params json.RawMessage)
	onLog   func(u *upstream, params json.RawMessage)
}

// Limits bound what one upstream may send and how long mcp-guard waits.
type Limits struct {
	MessageBytes int           // longest line an upstream may send
	CallTimeout  time.Duration // a tools/call
	StartTimeout time.Duration // spawn, initialize and the first tools/list
	ListPages    int           // tools/list pages walked at most
	ListBytes    int           // tools/list bytes read at most, all pages together
	StderrBytes  int64         // per-server stderr log size before it rotates
	ResultBytes  int           // largest tools/call result passed to the host
	ApprovalWait time.Duration // how long an ask holds the host's request
	Pending      int           // asks a host session may have waiting at once
	GrantTTL     time.Duration // how long a late approval can be used by an identical re-issue
}

func (l Limits) withDefaults() Limits {
	if l.MessageBytes <= 0 {
		l.MessageBytes = 4 << 20
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = 120 * time.Second
	}
	if l.StartTimeout <= 0 {
		l.StartTimeout = 60 * time.Second
	}
	if l.ListPages <= 0 {
		l.ListPages = 100
	}
	if l.ListBytes <= 0 {
		l.ListBytes = 16 << 20
	}
	if l.StderrBytes <= 0 {
		l.StderrBytes = 4 << 20
	}
	if l.ResultBytes <= 0 {
		l.ResultBytes = 1 << 20
	}
	if l.ApprovalWait <= 0 {
		l.ApprovalWait = 50 * time.Second
	}
	if l.Pending <= 0 {
		l.Pending = 8
	}
	if l.GrantTTL <= 0 {
		l.GrantTTL = 10 * time.Minute
	}
	return l
}

// upstream is one connected server, over stdio or HTTP.
type upstream struct {
	name   string
	log    *slog.Logger
	limits Limits
	conn   *conn
	stop   func() // ends the transport (and the process); dead closes after it

	version         string // mcp-guard's, sent as clientInfo.version
	protocolVersion string
	instructions    []byte // raw JSON string the server sent in initialize; "" when none
	hasTools        bool
	content         contentCaps   // prompts and resources it offers (content.go)
	updated         chan string   // URIs of notifications/resources/updated (content.go)
	listChanged     chan struct{} // the server said its tools changed (coalesced)
	setVersion      func(string)  // tells the transport the negotiated version, if it cares

	access     ClientAccess
	relay      func(u *upstream, method string, params json.RawMessage) (json.RawMessage, error)
	refused    func(u *upstream, method string, params json.RawMessage)
	callers    callers                                   // host requests in flight to this server
	onLog      func(u *upstream, params json.RawMessage) // relays notifications/message
	logs       logBucket
	refusals   logBucket // rate of refused client requests recorded
	hasLogging bool      // it declared the logging capability

	progressSeq atomic.Uint64
	progressMu  sync.Mutex
	progress    map[string]func(params json.RawMessage)

	closing atomic.Bool   // set by Close: the end is expected
	dead    chan struct{} // closed when the connection (and the process) have ended
	deadErr error
}

func newUpstream(spec UpstreamSpec, limits Limits, version string, log *slog.Logger) *upstream {
	return &upstream{
		version:     version,
		name:        spec.Name,
		log:         log.With("server", spec.Name),
		limits:      limits,
		progress:    make(map[string]func(json.RawMessage)),
		dead:        make(chan struct{}),
		listChanged: make(chan struct{}, 1),
		access:      spec.Access,
		relay:       spec.relay,
		refused:     spec.refused,
		onLog:       spec.onLog,
		updated:     make(chan string, 64),
	}
}

// startUpstream connects to the server (spawning it for stdio), initializes
// it and returns once it is ready for tools/list.
func startUpstream(ctx context.Context, spec UpstreamSpec, limits Limits, logDir, version string, log *slog.Logger) (*upstream, error) {
	limits = limits.withDefaults()
	var u *upstream
	var err error
	if spec.URL != "" {
		u, err = startHTTP(ctx, spec, limits, version, log)
	} else {
		u, err = startStdio(ctx, spec, limits, logDir, version, log)
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("server %q did not answer initialize within %s (limits.start_timeout)", spec.Name, limits.StartTimeout)
	}
	return u, err
}

// ended records why the upstream is gone and wakes everyone waiting on it.
func (u *upstream) ended(err error) {
	if err == nil {
		err = ErrClosed
	}
	if _, ok := err.(*endedError); !ok {
		err = &endedError{err: err}
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
func (u *upstream) Close() {
	u.closing.Store(true)
	u.stop()
	<-u.dead
}

// call sends one request and maps a broken connection to a clear reason.
func (u *upstream) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := u.conn.Call(ctx, method, params)
	return res, u.why(ctx, err)
}

// why explains a failed request: when the connection ended (and not the
// caller's context), it is the reason the upstream is gone, once known.
func (u *upstream) why(ctx context.Context, err error) error {
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

func (u *upstream) initialize(ctx context.Context) error {
	params := `{"protocolVersion":"` + ProtocolVersion + `","capabilities":` + u.access.capabilities() + `,"clientInfo":{"name":"mcp-guard","version":` + string(jsonString(u.version)) + `}}`
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

// listTools walks every tools/list page, refusing cursor loops and results
// over the page and byte caps.
func (u *upstream) listTools(ctx context.Context) ([]pin.Tool, error) {
	if !u.hasTools {
		return nil, nil
	}
	var tools []pin.Tool
	seen := map[string]bool{}
	cursor, total := "", 0
	for page := 0; ; page++ {
		if page == u.limits.ListPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", u.limits.ListPages)
		}
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params = json.RawMessage(`{"cursor":` + string(jsonString(cursor)) + `}`)
		}
		res, err := u.call(ctx, "tools/list", params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		total += len(res)
		if total > u.limits.ListBytes {
			return nil, fmt.Errorf("tools/list: results over %d bytes", u.limits.ListBytes)
		}
		pg, err := pin.SplitPage(res)
		if err != nil {
			return nil, err
		}
		tools = append(tools, pg.Tools...)
		if pg.NextCursor == "" {
			return tools, nil
		}
		if seen[pg.NextCursor] {
			return nil, fmt.Errorf("tools/list: cursor %q repeated", pg.NextCursor)
		}
		seen[pg.NextCursor] = true
		cursor = pg.NextCursor
	}
}

// callTool forwards one tools/call. args are sent exactly as given (nil: no
// arguments member). onProgress, when set, receives the params of each
// progress notification the upstream sends for this call. When ctx is
// cancelled, late (when set) later receives the upstream's answer, if it
// comes within the call timeout.
func (u *upstream) callTool(ctx context.Context, tool string, args json.RawMessage, onProgress func(json.RawMessage), late func(json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, u.limits.CallTimeout)
	defer cancel()
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
		params = append(params, `,"_meta":{"progressToken":"`+token+`"}`...)
	}
	params = append(params, '}')
	res, err := u.conn.CallLate(ctx, "tools/call", params, u.limits.CallTimeout, late)
	if err = u.why(ctx, err); errors.Is(err, context.DeadlineExceeded) {
		return nil, hostSafef("upstream %q did not answer within %s (limits.call_timeout)", u.name, u.limits.CallTimeout)
	}
	return res, err
}

// onNotify runs on the read loop: it must not block.
func (u *upstream) onNotify(method string, params json.RawMessage) {
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
		if u.onLog != nil {
			u.onLog(u, params)
		}
	case "notifications/tools/list_changed":
		select {
		case u.listChanged <- struct{}{}:
		default: // one is already pending
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
