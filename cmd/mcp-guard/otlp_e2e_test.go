package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// collector is the OpenTelemetry Collector's OTLP receiver, built from the
// collector's own Go modules in testdata/otelcol (a module of its own, so
// its dependencies never enter mcp-guard's go.mod), printing each export it
// receives as an OTLP/JSON line.
type collector struct {
	t     testing.TB
	port  int
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

var otelcolOnce struct {
	sync.Once
	bin, failure string
}

func startCollector(t testing.TB, port int) *collector {
	t.Helper()
	binaries(t)
	otelcolOnce.Do(func() {
		otelcolOnce.bin = filepath.Join(bins.dir, "otelcol")
		cmd := exec.Command("go", "build", "-o", otelcolOnce.bin, ".")
		cmd.Dir = "../../testdata/otelcol"
		if out, err := cmd.CombinedOutput(); err != nil {
			otelcolOnce.failure = fmt.Sprintf("go build testdata/otelcol: %v\n%s", err, out)
		}
	})
	if otelcolOnce.failure != "" {
		t.Fatal(otelcolOnce.failure)
	}
	if port == 0 {
		port = anyPort(t)
	}
	c := &collector{t: t, port: port, done: make(chan struct{})}
	c.cmd = exec.Command(otelcolOnce.bin, "-http", fmt.Sprintf("127.0.0.1:%d", port))
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	c.cmd.Stderr = &stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
		}
		c.cmd.Wait()
	}()
	t.Cleanup(c.stop)
	for deadline := time.Now().Add(30 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector does not listen on port %d: %s", port, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// anyPort is a TCP port free now on 127.0.0.1.
func anyPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// stop stops the collector and waits until it exited.
func (c *collector) stop() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	<-c.done
}

func (c *collector) url() string { return fmt.Sprintf("http://127.0.0.1:%d", c.port) }

// raw is everything the collector received, as text.
func (c *collector) raw() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// otelRec is one log record or span as the collector decoded it.
type otelRec struct {
	signal  string // "log" or "span"
	name    string // the log record's event_name, the span's name
	body    string
	trace   string
	span    string
	parent  string
	status  int
	attrs   map[string]string
	service string
}

type otlpAttrs []struct {
	Key   string `json:"key"`
	Value struct {
		String *string `json:"stringValue"`
		Int    *string `json:"intValue"`
		Bool   *bool   `json:"boolValue"`
		Array  *struct {
			Values []struct {
				String string `json:"stringValue"`
			} `json:"values"`
		} `json:"arrayValue"`
	} `json:"value"`
}

func (a otlpAttrs) m() map[string]string {
	out := map[string]string{}
	for _, kv := range a {
		v := kv.Value
		switch {
		case v.String != nil:
			out[kv.Key] = *v.String
		case v.Int != nil:
			out[kv.Key] = *v.Int
		case v.Bool != nil:
			out[kv.Key] = strconv.FormatBool(*v.Bool)
		case v.Array != nil:
			var l []string
			for _, x := range v.Array.Values {
				l = append(l, x.String)
			}
			out[kv.Key] = strings.Join(l, ",")
		}
	}
	return out
}

// records is every log record and span received so far.
func (c *collector) records() []otelRec {
	c.mu.Lock()
	lines := append([]string(nil), c.lines...)
	c.mu.Unlock()
	var out []otelRec
	for _, l := range lines {
		kind, js, _ := strings.Cut(l, " ")
		var x struct {
			ResourceLogs []struct {
				Resource struct {
					Attributes otlpAttrs `json:"attributes"`
				} `json:"resource"`
				ScopeLogs []struct {
					LogRecords []struct {
						EventName string                       `json:"eventName"`
						Body      struct{ StringValue string } `json:"body"`
						Attrs     otlpAttrs                    `json:"attributes"`
						TraceID   string                       `json:"traceId"`
						SpanID    string                       `json:"spanId"`
					} `json:"logRecords"`
				} `json:"scopeLogs"`
			} `json:"resourceLogs"`
			ResourceSpans []struct {
				Resource struct {
					Attributes otlpAttrs `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						Name    string    `json:"name"`
						Attrs   otlpAttrs `json:"attributes"`
						TraceID string    `json:"traceId"`
						SpanID  string    `json:"spanId"`
						Parent  string    `json:"parentSpanId"`
						Status  struct {
							Code int `json:"code"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal([]byte(js), &x); err != nil {
			c.t.Fatalf("collector output %s: %v", kind, err)
		}
		for _, rl := range x.ResourceLogs {
			svc := rl.Resource.Attributes.m()["service.name"]
			for _, sl := range rl.ScopeLogs {
				for _, r := range sl.LogRecords {
					out = append(out, otelRec{signal: "log", name: r.EventName, body: r.Body.StringValue, trace: r.TraceID, span: r.SpanID, attrs: r.Attrs.m(), service: svc})
				}
			}
		}
		for _, rs := range x.ResourceSpans {
			svc := rs.Resource.Attributes.m()["service.name"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, otelRec{signal: "span", name: s.Name, trace: s.TraceID, span: s.SpanID, parent: s.Parent, status: s.Status.Code, attrs: s.Attrs.m(), service: svc})
				}
			}
		}
	}
	return out
}

// find waits for a record of signal that has every attribute in want.
func (c *collector) find(signal string, want map[string]string) otelRec {
	c.t.Helper()
	var found otelRec
	eventually(c.t.(*testing.T), fmt.Sprintf("a %s with %v at the collector", signal, want), func() bool {
		for _, r := range c.records() {
			if r.signal != signal {
				continue
			}
			ok := true
			for k, v := range want {
				if r.attrs[k] != v {
					ok = false
				}
			}
			if ok {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

const otlpTools = `{"tools":[
{"name":"read","inputSchema":{"type":"object"}},
{"name":"echo","inputSchema":{"type":"object"}},
{"name":"drop","inputSchema":{"type":"object"}},
{"name":"run","inputSchema":{"type":"object"}}]}`

// otlpRules adds an exec rule and a deny rule to askRules.
const otlpRules = `
[[rule]]
server = "db"
tool = "run"
class = "exec"
action = "allow"

[[rule]]
server = "db"
tool = "drop"
class = "destructive"
action = "deny"
reason = "never"
` + askRules

const argCanary = "arg-canary-7f3a"

// Allowed, denied and asked calls each reach a real collector as a log
// record and a span with the MCP semantic conventions' attributes, the
// ledger's call ID and event hash; arguments stay out; chain heads arrive
// through the otlp witness; the collector's header is never logged; tools
// reports the counts.
func TestOTLP_DecisionsOutcomesHeads(t *testing.T) {
	t.Parallel()
	col := startCollector(t, 0)
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"30s\"\n",
		fmt.Sprintf("[export]\notlp = %q\nheaders = { \"x-api-key\" = \"sekret-header-value\" }\n", col.url()),
		e.fake("db", otlpTools), otlpRules)
	cfg = withWitness(t, cfg, `witness = ["otlp"]`)
	h := e.connect(cfg, "")
	if r, err := h.call(t, "db__read", map[string]any{"q": argCanary}); err != nil || r.IsError {
		t.Fatalf("allowed call: %v %v", err, r)
	}
	if r, err := h.call(t, "db__drop", map[string]any{"q": argCanary}); err != nil || !r.IsError {
		t.Fatalf("denied call: %v %v", err, r)
	}
	done := h.callAsync("db__echo", map[string]any{"q": argCanary}, 60*time.Second)
	id, shown := e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	if r := <-done; r.err != nil || r.res.IsError {
		t.Fatalf("approved call: %v %v", r.err, r.res)
	}

	if r, err := h.call(t, "db__run", map[string]any{"cmd": "true"}); err != nil || r.IsError {
		t.Fatalf("exec call: %v %v", err, r)
	}
	led := e.openLedger()
	var rows []ledger.CallRow
	eventually(t, "the four calls' outcomes in the ledger", func() bool {
		var err error
		rows, err = led.Calls(context.Background(), ledger.CallFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		ended := 0
		for _, r := range rows {
			if r.State == ledger.StateDone || r.State == ledger.StateRefused {
				ended++
			}
		}
		return len(rows) == 4 && ended == 4
	})
	for _, row := range rows {
		if row.Tool == "run" { // exec: its head went to the collector before the upstream had it
			seq, _, _, _ := led.CallEvent(context.Background(), row.ID, false)
			head := col.find("log", map[string]string{"mcp_guard.head.why": "exec"})
			if n, _ := strconv.ParseInt(head.attrs["mcp_guard.ledger.seq"], 10, 64); n < seq {
				t.Errorf("the exec head (seq %d) does not cover the call's decision (seq %d)", n, seq)
			}
			continue
		}
		base := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": row.Tool, "mcp_guard.server": "db",
			"mcp_guard.call.id": itoa(row.ID), "mcp_guard.decision": row.Decision, "mcp_guard.class": row.Class,
			"mcp_guard.rule": itoa(int64(row.Rule)), "mcp.session.id": row.SessionID}
		seq, hash, ok, err := led.CallEvent(context.Background(), row.ID, false)
		if err != nil || !ok {
			t.Fatalf("call %d's event: %v", row.ID, err)
		}
		base["mcp_guard.ledger.hash"], base["mcp_guard.ledger.seq"] = hash, itoa(seq)
		rec := col.find("log", base)
		if rec.name != "mcp_guard.decision" || rec.service != "mcp-guard" || rec.trace == "" {
			t.Errorf("call %d (%s): decision record %+v", row.ID, row.Decision, rec)
		}
		sp := col.find("span", base)
		if sp.trace != rec.trace || !strings.HasPrefix(sp.name, "mcp_guard.decide tools/call ") {
			t.Errorf("call %d: decision span %+v, record trace %s", row.ID, sp, rec.trace)
		}
		if row.Decision == "deny" {
			if sp.status != 2 || sp.attrs["error.type"] != "deny" || sp.attrs["mcp_guard.reason"] != "never" {
				t.Errorf("denied call's span: %+v", sp)
			}
			continue
		}
		// Allowed and approved calls have an outcome: a record and a
		// client span named "tools/call TOOL", child of the decision.
		_, last, _, _ := led.CallEvent(context.Background(), row.ID, true)
		out := col.find("log", map[string]string{"mcp_guard.call.id": itoa(row.ID), "mcp_guard.outcome": "done", "mcp_guard.ledger.hash": last})
		osp := col.find("span", map[string]string{"mcp_guard.call.id": itoa(row.ID), "mcp_guard.outcome": "done"})
		if out.trace != rec.trace || osp.name != "tools/call "+row.Tool || osp.parent != sp.span || osp.status != 1 {
			t.Errorf("call %d: outcome %+v, span %+v (decision span %s)", row.ID, out, osp, sp.span)
		}
	}
	col.find("log", map[string]string{"mcp_guard.decision": "approved", "gen_ai.tool.name": "echo"})

	// Chain heads, through the otlp witness: the one at start, and the
	// one committed before the destructive... (none here): at least start.
	head := col.find("log", map[string]string{"mcp_guard.head.why": "start"})
	if head.name != "mcp_guard.ledger.head" || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(head.attrs["mcp_guard.ledger.hash"]) || head.attrs["mcp_guard.ledger.id"] == "" {
		t.Errorf("head record: %+v", head)
	}

	if strings.Contains(col.raw(), argCanary) {
		t.Errorf("arguments reached the collector without include_arguments")
	}
	var tools string
	eventually(t, "tools to report serve's export counts", func() bool {
		tools, _ = e.mcpGuard("tools", "--config", cfg)
		return regexp.MustCompile(`export: serve pid \d+: exported [1-9]\d*, dropped 0, failed 0`).MatchString(tools)
	})
	if !strings.Contains(tools, "export: otlp "+col.url()+" (reachable)") || !strings.Contains(tools, "witness: otlp (reachable)") {
		t.Errorf("tools:\n%s", tools)
	}
	h.Close()
	if s := h.stderr.String(); strings.Contains(s, "sekret-header-value") || strings.Contains(tools, "sekret-header-value") {
		t.Errorf("the collector's header value was printed:\n%s", s)
	}
	col.find("log", map[string]string{"mcp_guard.head.why": "stop"})
}

// withWitness adds line to the config's [ledger] table.
func withWitness(t *testing.T, cfg, line string) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	src = strings.Replace(src, "[ledger]\n", "[ledger]\n"+line+"\n", 1)
	writeFile(t, cfg, src)
	return cfg
}

// With include_arguments, the arguments go out as
// gen_ai.tool.call.arguments.
func TestOTLP_IncludeArguments(t *testing.T) {
	t.Parallel()
	col := startCollector(t, 0)
	e := newEnv(t)
	cfg := e.config(fmt.Sprintf("[export]\notlp = %q\ninclude_arguments = true\n", col.url()), e.fake("db", otlpTools), otlpRules)
	h := e.connect(cfg, "")
	if r, err := h.call(t, "db__read", map[string]any{"q": argCanary}); err != nil || r.IsError {
		t.Fatalf("allowed call: %v %v", err, r)
	}
	rec := col.find("log", map[string]string{"gen_ai.tool.name": "read", "mcp_guard.decision": "allow"})
	if !strings.Contains(rec.attrs["gen_ai.tool.call.arguments"], argCanary) {
		t.Fatalf("arguments not exported with include_arguments: %+v", rec.attrs)
	}
}

// A collector that stops leaves calls unaffected: they succeed, and what
// could not be sent is counted (failed or dropped) and said when serve
// stops.
func TestOTLP_CollectorDownCallsGoOn(t *testing.T) {
	t.Parallel()
	col := startCollector(t, 0)
	e := newEnv(t)
	cfg := e.config(fmt.Sprintf("[export]\notlp = %q\n", col.url()), e.fake("db", otlpTools), otlpRules)
	h := e.connect(cfg, "")
	if r, err := h.call(t, "db__read", map[string]any{"n": 0}); err != nil || r.IsError {
		t.Fatalf("call: %v %v", err, r)
	}
	col.find("log", map[string]string{"gen_ai.tool.name": "read", "mcp_guard.outcome": "done"})
	col.stop()
	const n = 20
	for i := 1; i <= n; i++ {
		if r, err := h.call(t, "db__read", map[string]any{"n": i}); err != nil || r.IsError {
			t.Fatalf("call %d with the collector down: %v %v", i, err, r)
		}
	}
	if got := len(e.calls("db")); got != n+1 {
		t.Fatalf("upstream got %d calls, want %d", got, n+1)
	}
	h.Close()
	m := regexp.MustCompile(`export: stopped.*exported=(\d+) dropped=(\d+) failed=(\d+)`).FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("serve did not report its export counts:\n%s", h.stderr)
	}
	dropped, _ := strconv.Atoi(m[2])
	failed, _ := strconv.Atoi(m[3])
	if dropped+failed < 2*n {
		t.Fatalf("exported %s, dropped %d, failed %d: want the %d decisions and outcomes sent to a stopped collector counted", m[1], dropped, failed, 2*n)
	}
}
