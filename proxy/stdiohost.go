package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime/trace"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// stdioWorkers bounds the plain tools/call requests the fast path serves at
// once; callWorkers bounds the other tools/call requests (methods.go), and
// callQueue the ones waiting for those (past it, one is served on the read
// loop).
const (
	stdioWorkers = 16
	callWorkers  = 8
	callQueue    = 1024
)

// ServeStdio serves one host on in/out until in ends or ctx is done. A host
// line longer than the message limit ends the session.
//
// Each line is read once, here. An ordinary tools/call (an exposed tool,
// the session initialized, no task, no _meta but a progress token) is
// answered by the fast path, with one parse of the request: it is the hot
// path. A host's answer to a request mcp-guard sent it goes to the request
// waiting for it (stdiosession.go). A request of a method mcp-guard answers
// itself (methods.go) is served in the host's own session: tools/call on a
// worker, others each on its own goroutine. Every other message is
// answered, if at all, on the read loop (dispatch.go other). The fast path
// and methods.go run the same tool handler.
func (p *Proxy) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.startSupervisors(ctx)
	go p.watch(ctx)

	h := &stdioHost{
		p:        p,
		out:      &lockedWriter{w: out, redact: func(b []byte) []byte { return p.redactOut("stdio", b) }},
		jobs:     make(chan func()),
		callJobs: make(chan func(), callQueue),
		inflight: map[string]bool{},
	}
	h.sess = newStdioSession(h)
	if err := p.connect(h.sess); err != nil {
		return err
	}
	defer p.disconnect(h.sess)
	sctx, stopRequests := context.WithCancel(h.captureSession(withConn(ctx, h.sess)))
	defer stopRequests()
	for range stdioWorkers {
		h.wg.Add(1)
		go h.work(h.jobs)
	}
	for range callWorkers {
		h.wg.Add(1)
		go h.work(h.callJobs)
	}
	err := h.read(sctx, in)
	stopRequests()
	h.requests.Wait()
	h.stop()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// stdioHost is the stdio host's session: its read loop, the fast path for
// tools/call, and every other request (methods.go).
type stdioHost struct {
	p        *Proxy
	out      *lockedWriter
	sess     *stdioSession
	session  atomic.Pointer[context.Context] // the session's context (captureSession)
	jobs     chan func()                     // fast-path calls, to an idle worker; closed by stop
	callJobs chan func()                     // other tools/call (methods.go), queued; closed by stop
	wg       sync.WaitGroup
	requests sync.WaitGroup                     // other requests, each on its goroutine
	cancel   atomic.Pointer[context.CancelFunc] // ends every fast-path call

	mu       sync.Mutex
	stopped  bool
	inflight map[string]bool // fast-path calls by the request's raw id
}

// captureSession keeps the context the session is served with; fast-path
// calls run under it, so they see the same session.
func (h *stdioHost) captureSession(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, notifierKey{}, hostNotifier(h.notify))
	base, cancel := context.WithCancel(ctx)
	h.cancel.Store(&cancel)
	h.session.Store(&base)
	return ctx
}

// read serves each host line until in ends (nil) or ctx is done.
func (h *stdioHost) read(ctx context.Context, in io.Reader) error {
	lr := up.NewLineReader(in, int(h.p.opts.Limits.MessageBytes))
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		// This may stay blocked on in after ctx is done, as a read of
		// stdin may; the session does not wait for it.
		for {
			line, err := lr.ReadLine()
			if err != nil {
				readErr <- err
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case line = <-lines:
		}
		trace.Log(ctx, up.TraceStage, "host line read")
		if h.refuseBatch(line) || h.serve(line) {
			continue
		}
		h.cancelled(line)
		if h.sess.answered(line) {
			continue
		}
		if r, ok := h.p.ownRequest(line); ok {
			h.own(ctx, r, line)
			continue
		}
		h.other(line)
	}
}

// own serves r, read from line, a request of a method mcp-guard answers
// itself: a tools/call on a worker (on the read loop when the queue is
// full), any other on its own goroutine. A request the host cancels gets
// no answer.
func (h *stdioHost) own(ctx context.Context, r *hostRequest, line []byte) {
	serve := func() {
		if answer, _ := h.p.serveOwn(ctx, r, line); answer != nil {
			h.write(answer)
		}
	}
	if r.Method != string(mcp.MethodToolsCall) {
		h.requests.Go(serve)
		return
	}
	select {
	case h.callJobs <- serve:
	default:
		h.p.log.Warn("stdio host: tool call queue full; serving on the read loop")
		serve()
	}
}

// other answers a line no handler takes (dispatch.go other), on the read
// loop.
func (h *stdioHost) other(line []byte) {
	if answer, _ := other(line); answer != nil {
		h.write(answer)
	}
}

// write writes one answer line on the host's stream.
func (h *stdioHost) write(line []byte) {
	if _, err := h.out.Write(append(line, '\n')); err != nil {
		h.p.log.Debug("answer not delivered to host", "err", err)
	}
}

// work runs the calls queued on jobs. The workers live as long as the
// session, so a call does not start on a fresh goroutine's small stack and
// grow it again.
func (h *stdioHost) work(jobs <-chan func()) {
	defer h.wg.Done()
	for job := range jobs {
		job()
	}
}

// stop cancels the fast-path calls still running, as mcp-go cancels its
// own when the input ends, and waits for them to answer.
func (h *stdioHost) stop() {
	h.mu.Lock()
	h.stopped = true
	close(h.jobs)
	close(h.callJobs)
	h.mu.Unlock()
	if c := h.cancel.Load(); c != nil {
		(*c)()
	}
	h.wg.Wait()
}

// The methods the host transports look for before they parse a message.
const (
	toolsCallMethod = `"tools/call"`
	cancelledMethod = `"notifications/cancelled"`
)

// mayName reports whether msg may hold the JSON string quoted (a method,
// a member name) as a decoder reads it: it holds those bytes, or a
// backslash, without which no JSON string can spell them another way.
func mayName(msg []byte, quoted string) bool {
	return bytes.Contains(msg, []byte(quoted)) || bytes.IndexByte(msg, '\\') >= 0
}

// fastCall is a tools/call the fast path may serve: its id exactly as the
// host sent it, and the request as encoding/json reads it.
type fastCall struct {
	id  json.RawMessage
	req mcp.CallToolRequest
}

// parseFastCall reads line as an ordinary tools/call: one encoding/json
// reads the same way (FuzzParseFastCall holds it to that), which the tool
// handler serves with no other step. It reports false for anything else,
// which methods.go's tools/call handler serves.
func parseFastCall(line []byte) (fastCall, bool) {
	if !bytes.Contains(line, []byte(toolsCallMethod)) {
		return fastCall{}, false
	}
	// encoding/json, which the handler reads with, takes the last of duplicate
	// names, matches names case-insensitively, and merges a repeated object
	// into a field with its own decoder: a message where that matters is
	// the handler's.
	if !canon.Unique(line) {
		return fastCall{}, false
	}
	if c, ok := plainFastCall(line); ok {
		return c, true
	}
	return readFastCall(line)
}

// readFastCall is parseFastCall for a line canon.Unique accepted that
// plainFastCall does not read: encoding/json reads it, as the handler does.
func readFastCall(line []byte) (fastCall, bool) {
	if !exactNames(line, "jsonrpc", "id", "method", "params", "result", "error") {
		return fastCall{}, false
	}
	var m hostRequest // as methods.go reads a request
	if json.Unmarshal(line, &m) != nil || m.JSONRPC != mcp.JSONRPC_VERSION || m.Method != string(mcp.MethodToolsCall) ||
		m.Result != nil || m.Error != nil || !plainID(m.ID) {
		return fastCall{}, false
	}
	var ps struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		Meta           json.RawMessage `json:"_meta"`
		Task           json.RawMessage `json:"task"`
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   json.RawMessage `json:"requestState"`
	}
	if !exactNames(m.Params, "name", "arguments", "_meta", "task", "inputResponses", "requestState") || json.Unmarshal(m.Params, &ps) != nil ||
		ps.Task != nil || ps.InputResponses != nil || ps.RequestState != nil {
		return fastCall{}, false
	}
	c := fastCall{id: m.ID, req: mcp.CallToolRequest{Params: mcp.CallToolParams{Name: ps.Name}}}
	c.req.Method = string(mcp.MethodToolsCall)
	if ps.Meta != nil {
		// Only a progress token: other _meta (the newer protocol's request
		// metadata, trace context) is the handler's to read (methods.go).
		var meta mcp.Meta
		if string(ps.Meta) == "null" || json.Unmarshal(ps.Meta, &meta) != nil || len(meta.AdditionalFields) > 0 {
			return fastCall{}, false
		}
		c.req.Params.Meta = &meta
	}
	if len(ps.Arguments) > 0 {
		// The handler refuses arguments encoding/json cannot decode (a
		// number beyond float64), and records the refusal; leave those to it.
		if json.Unmarshal(ps.Arguments, &c.req.Params.Arguments) != nil {
			return fastCall{}, false
		}
		c.req.Params.RawArguments = ps.Arguments
	}
	return c, true
}

// serve answers line here if it is an ordinary tools/call for a registered
// tool, and reports whether it did.
func (h *stdioHost) serve(line []byte) bool {
	c, ok := parseFastCall(line)
	if !ok {
		return false
	}
	sp := h.session.Load()
	if sp == nil {
		return false
	}
	if !h.sess.isInitialized() {
		return false
	}
	e, ok := h.p.current(c.req.Params.Name)
	if !ok {
		return false // refused and recorded by toolsCall
	}
	id := string(c.id)
	key, ok := rawIDKey(c.id)
	if !ok {
		return false
	}
	rk := reqKey{session: "stdio", id: key}
	ctx, cancel := h.p.fastContext(*sp, rk)
	job := func() {
		defer cancel()
		trace.Log(ctx, up.TraceStage, "worker runs the call")
		line, answered := h.p.fastAnswer(ctx, e, c)
		h.mu.Lock()
		delete(h.inflight, id)
		h.mu.Unlock()
		if !answered {
			return // the host cancelled it: no answer (MCP)
		}
		if _, werr := h.out.Write(append(line, '\n')); werr != nil {
			h.p.log.Debug("answer not delivered to host", "err", werr)
		}
		trace.Log(ctx, up.TraceStage, "answer written to the host")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		cancel()
		return true // the session is over: nobody reads an answer
	}
	if _, dup := h.inflight[id]; dup {
		// An id still in flight: which one a cancellation means cannot
		// be told; the handler's path cancels both.
		cancel()
		return false
	}
	select {
	case h.jobs <- job:
		h.inflight[id] = true
		return true
	default:
		cancel()
		return false // every worker is busy: the handler's queue takes it
	}
}

// exactNames reports whether obj is a JSON object none of whose member names
// differs only in case from one of names (encoding/json would take it for
// that one).
func exactNames(obj []byte, names ...string) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(obj, &members) != nil {
		return false
	}
	for k := range members {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				return false
			}
		}
	}
	return true
}

// plainID reports whether id is a JSON string or number.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// notify writes a notification to the host's stream now, so that it is
// there before any answer written after it returns.
func (h *stdioHost) notify(_ context.Context, method string, params json.RawMessage) error {
	_, err := h.out.Write(append(notificationLine(method, params), '\n'))
	return err
}

// cancelled ends the request a host's notifications/cancelled names, with
// the host's reason, whichever path serves it.
func (h *stdioHost) cancelled(line []byte) {
	if !mayName(line, cancelledMethod) {
		return
	}
	n, ok := parseCancelled(line)
	if !ok {
		return
	}
	h.p.cancels.hostCancel(reqKey{session: "stdio", id: n.id}, n.reason)
}

// lockedWriter makes each Write one uninterrupted message on the host's
// stream: every writer writes whole lines, each in one Write.
// Every write passes redact (redact.go): the one place bytes leave for
// the stdio host.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	redact func([]byte) []byte
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	n := len(b)
	if w.redact != nil {
		b = w.redact(b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}
