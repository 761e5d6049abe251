package proxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// Multi round-trip requests (protocol 2026-07-28). A host on that revision
// cannot be sent a server-to-client request: when an upstream asks for
// sampling or elicitation while serving such a host's tools/call, the call
// stays in flight upstream and the host's tools/call is answered with an
// input_required result carrying the upstream's request and a requestState
// that mcp-guard issues. The host's retry (inputResponses + requestState)
// continues that same call: its answer goes to the upstream's pending
// request, and the call is not decided, recorded, approved or forwarded
// again. A requestState is a random token, good once, for the host session
// it was issued to, the tool it was issued for and the call's arguments;
// any other retry is refused and recorded.

// inputWait is how long a call waits for the host's retry after its
// input_required answer; then the call is cancelled upstream.
const inputWait = 10 * time.Minute

// inputKey is the key of the one input request in each input_required
// result mcp-guard sends.
const inputKey = "mcp-guard"

// roundsKey is the context key of a modern host's call in flight.
type roundsKey struct{}

// rounds is one modern host's tools/call in flight upstream.
type rounds struct {
	host   *hostSession
	tool   string               // the gate.ExposedTool name
	args   json.RawMessage      // the arguments decided and forwarded
	cancel func(cause error)    // ends the call upstream, with why
	asks   chan *inputAsk       // the upstream's requests for the host
	done   chan json.RawMessage // the call's answer, once
	failed chan error
}

// inputAsk is one upstream request waiting for the host's answer.
type inputAsk struct {
	method string
	params json.RawMessage
	answer chan inputAnswer // buffered: one answer
}

type inputAnswer struct {
	raw json.RawMessage
	err error
}

// roundsOf is the modern host call ctx serves, or nil.
func roundsOf(ctx context.Context) *rounds {
	rc, _ := ctx.Value(roundsKey{}).(*rounds)
	return rc
}

// ask hands the upstream's request to the host's side of the call and
// waits for the host's answer (from its retry).
func (rc *rounds) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a := &inputAsk{method: method, params: params, answer: make(chan inputAnswer, 1)}
	select {
	case rc.asks <- a:
	case <-ctx.Done():
		return nil, fmt.Errorf("the host did not answer %s: %w", method, context.Cause(ctx))
	}
	select {
	case ans := <-a.answer:
		return ans.raw, ans.err
	case <-ctx.Done():
		return nil, fmt.Errorf("the host did not answer %s: %w", method, context.Cause(ctx))
	}
}

// pendingInput is an issued requestState: the call it continues and the
// upstream request the retry must answer.
type pendingInput struct {
	rc    *rounds
	ask   *inputAsk
	timer *time.Timer
}

// inputStates are the requestStates issued and not yet used. Its zero
// value is ready.
type inputStates struct {
	mu     sync.Mutex
	issued map[string]*pendingInput
}

// issue makes a new requestState for ask in rc. Unanswered for inputWait,
// the call is cancelled.
func (s *inputStates) issue(rc *rounds, ask *inputAsk) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("requestState: %w", err)
	}
	state := "mcpg1." + base64.RawURLEncoding.EncodeToString(b[:])
	pi := &pendingInput{rc: rc, ask: ask}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issued == nil {
		s.issued = map[string]*pendingInput{}
	}
	s.issued[state] = pi
	pi.timer = time.AfterFunc(inputWait, func() {
		s.mu.Lock()
		_, still := s.issued[state]
		delete(s.issued, state)
		s.mu.Unlock()
		if still {
			why := errors.New("the host did not retry the call in time")
			ask.answer <- inputAnswer{err: why}
			rc.cancel(why)
		}
	})
	return state, nil
}

// claim takes the requestState for a retry by host of tool with args. It
// is used up only by the retry it was issued for: another session's retry
// leaves it for its own host.
func (s *inputStates) claim(state string, host *hostSession, tool string, args json.RawMessage) (*pendingInput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.issued[state]
	if !ok {
		return nil, errors.New("the requestState is not one mcp-guard issued, or it was already used or has expired")
	}
	if pi.rc.host != host {
		return nil, errors.New("the requestState was issued to another host session")
	}
	if pi.rc.tool != tool {
		return nil, fmt.Errorf("the requestState was issued for a call of %s, not %s", pi.rc.tool, tool)
	}
	if !sameJSON(pi.rc.args, args) {
		return nil, errors.New("the retry's arguments differ from those of the call it continues")
	}
	delete(s.issued, state)
	pi.timer.Stop()
	return pi, nil
}

// sameJSON reports whether a and b are the same JSON value (absent and
// null alike).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 && json.Unmarshal(a, &x) != nil {
		return false
	}
	if len(b) > 0 && json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// modernCall runs a modern host's new call through run (the pipeline) on a
// context that outlives this host request, and answers the host with the
// call's result or with an input_required result when the upstream asks
// for the host's input first.
func (p *Proxy) modernCall(ctx context.Context, host *hostSession, tool string, args json.RawMessage, run func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	rc := &rounds{host: host, tool: tool, args: args, cancel: cancel,
		asks: make(chan *inputAsk), done: make(chan json.RawMessage, 1), failed: make(chan error, 1)}
	callCtx = context.WithValue(callCtx, roundsKey{}, rc)
	go func() {
		defer cancel(nil)
		res, err := run(callCtx)
		if err != nil {
			rc.failed <- err
			return
		}
		rc.done <- res
	}()
	return p.awaitRound(ctx, rc)
}

// awaitRound waits for rc's next step: its result, or an upstream request
// for the host, which is answered as input_required.
func (p *Proxy) awaitRound(ctx context.Context, rc *rounds) (json.RawMessage, error) {
	select {
	case res := <-rc.done:
		return res, nil
	case err := <-rc.failed:
		return nil, err
	case a := <-rc.asks:
		req, err := inputRequest(a.method, a.params)
		if err != nil {
			a.answer <- inputAnswer{err: &up.RPCError{Code: codeInvalidParams, Message: err.Error()}}
			return p.awaitRound(ctx, rc)
		}
		state, err := p.inputs.issue(rc, a)
		if err != nil {
			a.answer <- inputAnswer{err: err}
			rc.cancel(err)
			return nil, err
		}
		p.log.Info("upstream asks the host for input; answered input_required", "tool", rc.tool, "method", a.method)
		return json.Marshal(&mcp.CallToolResult{
			Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
			MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: mcp.InputRequests{inputKey: req}, RequestState: state},
		})
	case <-ctx.Done():
		// The host gave up on this request (cancelled, with its reason,
		// or its session ended): the call ends with it.
		rc.cancel(context.Cause(ctx))
		return nil, ctx.Err()
	}
}

// inputRequest is the upstream's request as an input request.
func inputRequest(method string, params json.RawMessage) (mcp.InputRequest, error) {
	b, err := json.Marshal(struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params,omitempty"`
	}{method, params})
	if err != nil {
		return mcp.InputRequest{}, fmt.Errorf("%s: %w", method, err)
	}
	var r mcp.InputRequest
	if err := json.Unmarshal(b, &r); err != nil {
		return mcp.InputRequest{}, fmt.Errorf("%s: %w", method, err)
	}
	if schema, ok := member(params, "requestedSchema"); ok && r.Elicitation != nil && string(schema) != "null" {
		// The form as the server wrote it: its fields in the server's
		// order, not re-encoded from a map.
		r.Elicitation.RequestedSchema = schema
	}
	return r, nil
}

// continueCall serves a modern host's retry: with a requestState mcp-guard
// issued to this host for this call, the host's answer goes to the
// upstream's pending request and the call goes on; any other retry is
// refused and recorded, and nothing reaches an upstream.
func (p *Proxy) continueCall(ctx context.Context, e gate.ExposedTool, host *hostSession, req mcp.CallToolRequest, args json.RawMessage) (json.RawMessage, error) {
	pi, err := p.inputs.claim(req.Params.RequestState, host, e.Name, args)
	if err != nil {
		p.refusedRetry(ctx, e, host, args, err)
		return nil, fmt.Errorf("mcp-guard: retry refused: %w", err)
	}
	ans := inputAnswer{err: errors.New("the host's retry carried no answer to the request")}
	if r, ok := req.Params.InputResponses[inputKey]; ok {
		raw, merr := json.Marshal(r)
		ans = inputAnswer{raw: raw, err: merr}
	}
	pi.ask.answer <- ans
	p.log.Info("host answered the upstream's request; the call goes on", "tool", e.Name, "method", pi.ask.method)
	return p.awaitRound(ctx, pi.rc)
}

// refusedRetry records a retry that continues no call of this host.
func (p *Proxy) refusedRetry(ctx context.Context, e gate.ExposedTool, host *hostSession, args json.RawMessage, why error) {
	r := gate.Refusal{Kind: gate.KindTool, SessionID: host.lease.ID(), Exposed: e.Name, Server: e.Server, Name: e.Tool.Name,
		Shown: true, PinDigest: e.Tool.Digest(), Args: args, Retry: why}
	if id, _, err := p.pipe.Refuse(ctx, r); err != nil {
		p.log.Error("refused retry not recorded", "tool", e.Name, "err", err)
	} else {
		p.log.Warn("multi round-trip retry refused", "id", id, "tool", e.Name, "why", why)
	}
}
