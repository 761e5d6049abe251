package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// loadCall is one call a load-test host made and what it received.
type loadCall struct {
	host     int
	args     string
	answered bool
	text     string
	isError  bool
	rpcErr   string
}

// H hosts × M calls, each host through its own mcp-guard serve process (same
// config), all sharing one ledger file; every call allowed, with unique
// arguments, several in flight per host. Afterwards: every host got every
// answer, the echo of what it sent; the ledger has exactly one row per call
// (none lost, none duplicated), done, in the session of the serve process
// that host talked to, with the arguments digest of what was sent and the
// result digest of the upstream's bytes (recomputed from the text the host
// received: fakeup's echo result is a fixed function of the arguments); the
// upstream received each call once; and the chain verifies.
//
// MCP_GUARD_LOAD_HOSTS and MCP_GUARD_LOAD_CALLS set H and M (default 4 and
// 100; 8 and 1,000 under MCP_GUARD_SOAK).
func TestLoad_HostsShareOneLedger(t *testing.T) {
	hosts := soakInt(t, "MCP_GUARD_LOAD_HOSTS", 4, 8)
	perHost := soakInt(t, "MCP_GUARD_LOAD_CALLS", 100, 1000)
	const inflight = 4 // per host
	e := newEnv(t)
	cfg := e.config(generousLimits, e.fake("up", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), allowAll)

	// The serve processes start together on a fresh ledger (they race to
	// pin the same tool).
	ss := make([]*streamHost, hosts)
	errs := make([]error, hosts)
	var wg sync.WaitGroup
	for h := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); ss[h], errs[h] = e.launchStream(cfg) }()
	}
	wg.Wait()
	for h, err := range errs {
		if err != nil {
			t.Fatalf("host %d: %v", h, err)
		}
	}
	// A serve that lost the race saw the server as known and recorded the
	// tool as new; the winner's first contact pins it, and the loser shows
	// it once it notices (within its ledger poll). A host calls what it was
	// listed: each waits until its serve lists the tool.
	for h := range hosts {
		eventually(t, fmt.Sprintf("host %d is listed up__echo", h), func() bool {
			m, ok := ss[h].request("tools/list", `{}`, 10*time.Second)
			return ok && strings.Contains(string(m.Result), `"up__echo"`)
		})
	}

	calls, elapsed := runLoad(hosts, perHost, inflight, func(h, _ int, args string) (rpcMsg, bool) {
		return ss[h].callTool("up__echo", args, 60*time.Second)
	})
	for h := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); ss[h].close() }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	verifyLoad(t, e, cfg, calls)
	n := hosts * perHost
	t.Logf("%d hosts × %d calls (%d in flight each) through %d serve processes sharing one ledger: %s, %.0f calls/s",
		hosts, perHost, inflight, hosts, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
}

// The same over HTTP: H host sessions of one `serve --http` process, each
// with several calls in flight at once on their own connections. Most
// calls take the HTTP fast path; every fifth carries other _meta, which
// the fast path leaves to mcp-go, so both paths serve each session at
// once. The same checks (verifyLoad): each HTTP session is its own ledger
// session.
func TestLoad_HTTPSessionsShareOneServe(t *testing.T) {
	hosts := soakInt(t, "MCP_GUARD_LOAD_HOSTS", 4, 8)
	perHost := soakInt(t, "MCP_GUARD_LOAD_CALLS", 100, 1000)
	const inflight = 4 // per host
	e := newEnv(t)
	cfg := e.config(generousLimits, e.fake("up", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), allowAll)
	ss := []*rawHTTP{e.rawHTTPConnect(cfg)}
	for len(ss) < hosts {
		ss = append(ss, ss[0].another())
	}

	failed := make(chan string, 1)
	calls, elapsed := runLoad(hosts, perHost, inflight, func(h, i int, args string) (rpcMsg, bool) {
		meta := ""
		if i%5 == 4 {
			meta = fmt.Sprintf(`,"_meta":{"x-load":%d}`, i)
		}
		resp, err := ss[h].send(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo","arguments":%s%s}}`, i, args, meta), nil)
		if err != nil {
			select {
			case failed <- fmt.Sprintf("host %d call %d: %v", h, i, err):
			default:
			}
			return rpcMsg{}, false
		}
		defer resp.Body.Close()
		for _, m := range readMessages(resp) {
			if string(m.ID) == strconv.Itoa(i) && m.Method == "" {
				return m, true
			}
		}
		return rpcMsg{}, false
	})
	select {
	case f := <-failed:
		t.Fatal(f)
	default:
	}
	// serve keeps running: the last calls' outcomes wait up to 25 ms for a
	// decision to share their commit.
	led := e.openLedger()
	eventually(t, "the last outcomes to commit", func() bool {
		rows := allCalls(t, led)
		for _, r := range rows {
			if r.State != ledger.StateDone {
				return false
			}
		}
		return len(rows) == hosts*perHost
	})
	verifyLoad(t, e, cfg, calls)
	n := hosts * perHost
	t.Logf("%d HTTP sessions × %d calls (%d in flight each), a fifth through mcp-go: %s, %.0f calls/s",
		hosts, perHost, inflight, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
}

// runLoad makes perHost calls from each of hosts hosts, inflight at once
// per host, each with unique arguments of varied size: call makes call i of
// host h and returns its answer, or false if none came (that host's worker
// stops). It returns every call with what it received, and how long all
// took.
func runLoad(hosts, perHost, inflight int, call func(h, i int, args string) (rpcMsg, bool)) ([][]*loadCall, time.Duration) {
	calls := make([][]*loadCall, hosts)
	var wg sync.WaitGroup
	start := time.Now()
	for h := range hosts {
		calls[h] = make([]*loadCall, perHost)
		var next atomic.Int64
		for range inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= perHost {
						return
					}
					c := &loadCall{host: h, args: fmt.Sprintf(`{"id":"h%d-%d","pad":%q}`, h, i, strings.Repeat("p", (i*37)%500))}
					calls[h][i] = c
					m, ok := call(h, i, c.args)
					if !ok {
						return
					}
					c.answered = true
					text, isErr, err := toolResult(m)
					c.text, c.isError = text, isErr
					if err != nil {
						c.rpcErr = err.Error()
					}
				}
			}()
		}
	}
	wg.Wait()
	return calls, time.Since(start)
}

// verifyLoad checks what a load test's hosts received and what the ledger
// and the upstream hold: every call answered with the echo of what was
// sent; exactly one row per call (none lost, none duplicated), done, in one
// session per host and no two hosts in one session, with the digests of
// what was sent and what the upstream answered; the upstream received each
// call once; and the chain verifies.
func verifyLoad(t *testing.T, e *env, cfg string, calls [][]*loadCall) {
	t.Helper()
	hosts, perHost := len(calls), len(calls[0])
	byID := map[string]*loadCall{}
	for h := range hosts {
		for i, c := range calls[h] {
			switch {
			case c == nil || !c.answered:
				t.Fatalf("host %d call %d was never answered", h, i)
			case c.rpcErr != "" || c.isError || c.text != c.args:
				t.Fatalf("host %d sent %s and got %q (isError %v) %s", h, c.args, c.text, c.isError, c.rpcErr)
			}
			byID[argID([]byte(c.args))] = c
		}
	}

	led := e.openLedger()
	rows := allCalls(t, led)
	if len(rows) != hosts*perHost {
		t.Errorf("the ledger has %d calls; the hosts made %d", len(rows), hosts*perHost)
	}
	seen := map[string]int64{}
	sessionOf := map[int]string{} // host → the session of its serve process
	hostOf := map[string]int{}
	for _, r := range rows {
		id := argID(r.Args)
		c := byID[id]
		if c == nil {
			t.Fatalf("call %d has arguments %s no host sent", r.ID, r.Args)
		}
		if prev, dup := seen[id]; dup {
			t.Fatalf("calls %d and %d both record %s", prev, r.ID, c.args)
		}
		seen[id] = r.ID
		if r.State != ledger.StateDone || r.Decision != "allow" || r.IsError || r.Tool != "echo" || string(r.Args) != c.args {
			t.Fatalf("call %d for %s: %s %s state=%s decision=%s isError=%v", r.ID, c.args, r.Tool, r.Args, r.State, r.Decision, r.IsError)
		}
		if r.ArgsDigest != canonArgsDigest(t, c.args) {
			t.Fatalf("call %d: arguments digest %s, not that of %s", r.ID, r.ArgsDigest, c.args)
		}
		if r.ResultDigest != upstreamEchoDigest("echo", c.text) {
			t.Fatalf("call %d: result digest %s does not match what host %d received for %s", r.ID, r.ResultDigest, c.host, c.args)
		}
		if s, ok := sessionOf[c.host]; !ok {
			sessionOf[c.host] = r.SessionID
			if other, taken := hostOf[r.SessionID]; taken {
				t.Fatalf("hosts %d and %d share session %s", other, c.host, r.SessionID)
			}
			hostOf[r.SessionID] = c.host
		} else if s != r.SessionID {
			t.Fatalf("host %d's calls are in sessions %s and %s", c.host, s, r.SessionID)
		}
	}
	for id, c := range byID {
		if _, ok := seen[id]; !ok {
			t.Errorf("host %d's call %s has no ledger row", c.host, c.args)
		}
	}
	received := e.receivedCalls("up")
	if len(received) != hosts*perHost {
		t.Errorf("the upstreams received %d distinct calls; the hosts made %d", len(received), hosts*perHost)
	}
	for id, got := range received {
		if len(got) != 1 || byID[id] == nil || got[0] != byID[id].args {
			t.Fatalf("the upstreams received %s %d times", id, len(got))
		}
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 || !strings.Contains(out, "hash chain intact") {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
}
