package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Progress relay limits, per host request: progressBurst notifications may
// pass at once and progressRate a second after that, untouched (a server
// reporting up to 20 times a second sees no change). Past that the relay
// coalesces: it keeps only the latest one waiting and passes it when the
// rate allows, and it always passes the last one before the result.
const (
	progressBurst = 20
	progressRate  = 20
)

// notifierKey is the context key of a function that writes a notification
// straight to the host's stream (the stdio host and each HTTP host POST set
// one): written so, a notification is on the stream before the answer
// written after it.
type notifierKey struct{}

// hostNotifier writes one notification to the host of the request ctx
// belongs to, params (one line of JSON) as they are.
type hostNotifier func(ctx context.Context, method string, params json.RawMessage) error

// notifyHost sends a notification to the host of ctx's request: straight
// onto the request's own stream where its transport set a notifier, else
// queued on its connection (which an HTTP fast-path call's stream does
// not read).
func notifyHost(ctx context.Context, method string, params json.RawMessage) error {
	if direct, ok := ctx.Value(notifierKey{}).(hostNotifier); ok && direct(ctx, method, params) == nil {
		return nil
	}
	c := connOf(ctx)
	switch {
	case c == nil:
		return errors.New("the request has no host connection")
	case !c.peer().isInitialized():
		return errNotInitialized
	}
	return c.queue(method, params)
}

// notificationLine is the JSON-RPC notification of method with params
// (one line of JSON) as they are; with none if params is nil.
func notificationLine(method string, params json.RawMessage) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","method":`), jsonString(method)...)
	if len(params) > 0 {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}')
}

// progressRelay passes one host request's upstream progress notifications
// to the host under the host's token: rate-limited and coalesced, each
// progress value at least the last one passed, message text escaped like
// every other piece of server text. offer runs on the upstream read loop
// and never blocks; its own goroutine delivers.
type progressRelay struct {
	send func(params json.RawMessage) error

	mu      sync.Mutex
	tokens  float64
	last    time.Time         // when tokens was last refilled
	floor   float64           // the highest progress accepted so far
	any     bool              // floor holds a value
	ready   []json.RawMessage // passed the rate limit, to deliver in order
	pending json.RawMessage   // the latest one over the rate, coalesced
	closed  bool
	passed  int
	dropped int // coalesced away
	refused int // not a number, or lower than one accepted before

	wake   chan struct{} // capacity 1
	exited chan struct{}
}

// newProgressRelay starts the relay for one host request that asked for
// progress with hostToken. finish must be called when the call ends.
func (p *Proxy) newProgressRelay(ctx context.Context, hostToken mcp.ProgressToken) *progressRelay {
	log := p.log
	r := &progressRelay{
		tokens: progressBurst,
		wake:   make(chan struct{}, 1),
		exited: make(chan struct{}),
	}
	token, err := json.Marshal(hostToken)
	if err != nil {
		token = []byte("null") // mcp-go read it from JSON: it encodes
	}
	r.send = func(params json.RawMessage) error {
		// the host's token in place of the upstream's, where the server put it
		if withToken, ok := setMember(params, "progressToken", token); ok {
			params = withToken
		}
		return notifyHost(ctx, "notifications/progress", params)
	}
	go r.run(func(err error) { log.Debug("progress not delivered to host", "err", err) })
	return r
}

// progressParams reads an upstream's progress notification params into what
// the host may receive: progress (a JSON number, as sent), total (only if a
// number), message (escaped and cut like a log line). Other members are
// dropped. ok is false when progress is missing or not a number. When the
// server sent only those members and its progressToken, out is the
// server's own bytes, its message replaced in place only if escaping
// changed it; the relay puts the host's token in place of the server's.
func progressParams(raw json.RawMessage) (out json.RawMessage, progress float64, ok bool) {
	m, progress, ok := progressMembers(raw)
	if !ok {
		return nil, 0, false
	}
	if names, ok := memberNames(raw); ok && progressVerbatim(names, m) {
		if v, ok := verbatimProgress(raw, m); ok {
			return v, progress, true
		}
	}
	out, err := json.Marshal(m)
	return out, progress, err == nil
}

// verbatimProgress is raw on one line, its message replaced in place by
// the escaped one in kept only if escaping changed it.
func verbatimProgress(raw json.RawMessage, kept map[string]any) (json.RawMessage, bool) {
	out, _, err := oneLine(raw)
	if err != nil {
		return nil, false
	}
	shown, ok := kept["message"].(string)
	if !ok {
		return out, true
	}
	var sent string
	if m, ok := member(out, "message"); !ok || json.Unmarshal(m, &sent) != nil {
		return nil, false
	}
	if shown == sent {
		return out, true
	}
	return replaceMember(out, "message", jsonString(shown))
}

// progressVerbatim reports whether a server's progress params, with member
// names, can reach the host as sent: no member but those the host may
// receive and the token, each of them of its type.
func progressVerbatim(names []string, kept map[string]any) bool {
	for _, n := range names {
		switch n {
		case "progressToken", "progress":
		case "total", "message":
			if _, ok := kept[n]; !ok {
				return false // present but not a number, not a string
			}
		default:
			return false
		}
	}
	return true
}

// memberNames lists the top-level member names of a JSON object, in order;
// ok is false when raw is not an object, repeats a name or is not UTF-8.
func memberNames(raw json.RawMessage) (names []string, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	for dec.PeekKind() != '}' {
		k, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		names = append(names, k.String())
		if err := dec.SkipValue(); err != nil {
			return nil, false
		}
	}
	return names, true
}

// progressMembers reads the members progressParams keeps.
func progressMembers(raw json.RawMessage) (out map[string]any, progress float64, ok bool) {
	var f struct {
		Progress json.RawMessage `json:"progress"`
		Total    json.RawMessage `json:"total"`
		Message  json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &f) != nil || json.Unmarshal(f.Progress, &progress) != nil || !isNumber(f.Progress) {
		return nil, 0, false
	}
	out = map[string]any{"progress": f.Progress}
	var total float64
	if json.Unmarshal(f.Total, &total) == nil && isNumber(f.Total) {
		out["total"] = f.Total
	}
	var msg string
	if json.Unmarshal(f.Message, &msg) == nil && isString(f.Message) {
		out["message"] = safetext.Show(msg, logTextMax)
	}
	return out, progress, true
}

func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

func isString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }

// offer takes one upstream progress notification's params. It runs on the
// upstream's read loop: it only updates state and wakes the relay.
func (r *progressRelay) offer(raw json.RawMessage) {
	out, progress, ok := progressParams(raw)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if !ok || (r.any && progress < r.floor) {
		r.refused++
		return
	}
	r.floor, r.any = progress, true
	switch {
	case r.pending == nil && len(r.ready) < progressBurst && r.takeNow():
		r.ready = append(r.ready, out)
	default:
		if r.pending != nil {
			r.dropped++
		}
		r.pending = out
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *progressRelay) takeNow() bool {
	ok, _ := r.take(time.Now())
	return ok
}

// take spends a token if one is there, refilling at progressRate; else it
// says how long until one is.
func (r *progressRelay) take(now time.Time) (bool, time.Duration) {
	if !r.last.IsZero() {
		r.tokens = min(progressBurst, r.tokens+now.Sub(r.last).Seconds()*progressRate)
	}
	r.last = now
	if r.tokens >= 1 {
		r.tokens--
		return true, 0
	}
	return false, time.Duration((1 - r.tokens) / progressRate * float64(time.Second))
}

// run delivers what offer accepted, at the rate take allows; once finish
// closes the relay it delivers the one still waiting, whatever the rate,
// and exits.
func (r *progressRelay) run(failed func(error)) {
	defer close(r.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		r.mu.Lock()
		if len(r.ready) > 0 {
			next := r.ready[0]
			r.ready = r.ready[1:]
			r.passed++
			r.mu.Unlock()
			if err := r.send(next); err != nil {
				failed(err)
			}
			continue
		}
		next, closed := r.pending, r.closed
		if next == nil {
			r.mu.Unlock()
			if closed {
				return
			}
			<-r.wake
			continue
		}
		ok, wait := r.take(time.Now())
		if ok || closed {
			r.pending = nil
			r.passed++
			r.mu.Unlock()
			if err := r.send(next); err != nil {
				failed(err)
			}
			continue
		}
		r.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-r.wake:
			timer.Stop() // Go 1.23 timers: no stale tick after Stop
		}
	}
}

// finish delivers the latest progress still waiting, before the result
// goes to the host, stops the relay and reports what it passed and left
// out.
func (r *progressRelay) finish() (passed, dropped, refused int) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	<-r.exited
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passed, r.dropped, r.refused
}
