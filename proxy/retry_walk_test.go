package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// The walks of K8: a server cannot make mcp-guard retry faster than the
// backoff. In the bubble the waits pass in its time, so the starts and
// listings are counted against exact seconds.

var allRules = []classify.Rule{{Server: "*", Tool: "*", Class: classify.Read, Action: classify.Allow}, {Server: "*", Prompt: "*", Action: classify.Allow}}

// dyingSpec is an upstream whose connection ends as soon as it is made,
// counting each start.
func dyingSpec(name string, starts *atomic.Int32) up.Spec {
	return up.Spec{Name: name, Dial: func(context.Context) (io.ReadWriteCloser, error) {
		starts.Add(1)
		ours, theirs := net.Pipe()
		theirs.Close()
		return ours, nil
	}}
}

// countOf is how many lines of the upstream's record hold s.
func (m *memProxy) countOf(t *testing.T, name, s string) int {
	t.Helper()
	n := 0
	for _, l := range readLines(t, m.dir+"/"+name+".record") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// A server that closes its connection as soon as it starts is started
// again after 1s, 2s, 4s: four starts in 9.5s, not ten; the other server
// is served meanwhile, and the log says how many failures in a row.
func TestWalk_ServerThatNeverStartsBacksOff(t *testing.T) {
	walk(t, func(t *testing.T) {
		var starts atomic.Int32
		p := newMemProxyWith(t, mustRules(t, allRules), func(o *Options) {
			o.Upstreams = append(o.Upstreams, dyingSpec("dies", &starts))
		}, [2]string{"good", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		began := time.Now()
		eventually(t, "the first start", func() bool { return starts.Load() > 0 })
		time.Sleep(9500*time.Millisecond - time.Since(began))
		// Starts at 0, 1, 3 and 7s (up to a quarter sooner each; the fifth
		// comes at 11.25s at the soonest).
		if n := starts.Load(); n != 4 {
			t.Fatalf("the dying server was started %d times in 9.5s, want 4", n)
		}
		if r := h.request("e", "tools/call", `{"name":"good__echo","arguments":{}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("good__echo: %+v %s", r.Error, r.Result)
		}
		for _, want := range []string{"upstream not ready; trying again later", "failures_in_a_row=2", "failures_in_a_row=3"} {
			if !strings.Contains(p.log.String(), want) {
				t.Fatalf("log lacks %q:\n%s", want, p.log)
			}
		}
	})
}

// limits.retry_wait and retry_wait_max set the waits: a server that never
// starts, retried after 200ms doubled up to 400ms, is started eight times
// in 3s, up to eleven with the jitter (three with the defaults).
func TestWalk_ConfigSetsTheWaits(t *testing.T) {
	walk(t, func(t *testing.T) {
		var starts atomic.Int32
		p := newMemProxyWith(t, mustRules(t, allRules), func(o *Options) {
			o.Upstreams = append(o.Upstreams, dyingSpec("dies", &starts))
			o.Limits.RetryWait, o.Limits.RetryWaitMax = 200*time.Millisecond, 400*time.Millisecond
		}, [2]string{"good", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`})
		startMemHost(t, p.Proxy)
		began := time.Now()
		eventually(t, "the first start", func() bool { return starts.Load() > 0 })
		time.Sleep(3*time.Second - time.Since(began))
		// Starts at 0, 0.2, 0.6, 1, 1.4 … 3s.
		if n := starts.Load(); n < 8 || n > 11 {
			t.Fatalf("the dying server was started %d times in 3s, want 8 to 11", n)
		}
	})
}

// list_changed storms (tools, prompts, resources at once, every 10ms for
// 5s) are answered by one listing at once, then after 1s, 2s, 4s: a
// handful of listings, not hundreds; the server's tools work meanwhile.
func TestWalk_ListChangedStormIsPaced(t *testing.T) {
	walk(t, func(t *testing.T) {
		notices := []string{
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
			`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`,
		}
		quoted := make([]string, len(notices))
		for i, n := range notices {
			quoted[i] = strconv.Quote(n)
		}
		p := newMemProxy(t, allRules, [2]string{"stormy", `{"tools":[{"name":"storm","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}],
		"prompts":[{"name":"p"}],"resources":[{"uri":"file:///r","name":"r"}],"resourceTemplates":[{"uriTemplate":"file:///t/{x}","name":"t"}],
		"calls":{"storm":{"do":"storm","count":500,"intervalMs":10,"lines":[` + strings.Join(quoted, ",") + `]}}}`})
		h := startMemHost(t, p.Proxy)
		methods := []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
		before := map[string]int{}
		for _, m := range methods {
			before[m] = p.countOf(t, "stormy", `"method":"`+m+`"`)
		}
		if r := h.request("s", "tools/call", `{"name":"stormy__storm","arguments":{}}`); r.Error != nil {
			t.Fatalf("storm: %+v", r.Error)
		}
		began := time.Now()
		for i := 0; time.Since(began) < 9*time.Second; i++ {
			if r := h.request(fmt.Sprint("e", i), "tools/call", fmt.Sprintf(`{"name":"stormy__echo","arguments":{"i":%d}}`, i)); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
				t.Fatalf("echo during the storm: %+v %s", r.Error, r.Result)
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, m := range methods {
			// 1,500 notices over 5s: listings at 0, 1, 3 and 7s (the last
			// one answering what came after 3s).
			if got := p.countOf(t, "stormy", `"method":"`+m+`"`) - before[m]; got < 3 || got > 5 {
				t.Errorf("%s: listed %d times during the storm, want 3 to 5", m, got)
			}
		}
		if got := h.toolNames("after"); !slices.Contains(got, "stormy__echo") {
			t.Fatalf("after the storm the host sees %v", got)
		}
	})
}

// A server whose listing fails when its list_changed asks for one (its
// cursor never ends after a rug pull) is withdrawn, closed and started
// again after the backoff's wait; started anew it lists, and its tools are
// back.
func TestWalk_ListingThatFailsOnListChangedRestartsTheServer(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allRules, [2]string{"turns", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"pull","inputSchema":{"type":"object"}}],
		"toolsAfterRugpull":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"pull","inputSchema":{"type":"object"}}],
		"endlessAfterRugpull":true,"calls":{"pull":{"do":"rugpull"}}}`})
		h := startMemHost(t, p.Proxy)
		if r := h.request("p", "tools/call", `{"name":"turns__pull","arguments":{}}`); r.Error != nil {
			t.Fatalf("pull: %+v", r.Error)
		}
		eventually(t, "the server to be started again", func() bool { return p.countOf(t, "turns", `"method":"initialize"`) == 2 })
		eventually(t, "its tools to be back", func() bool {
			return slices.Contains(h.toolNames(fmt.Sprint("l", time.Now().UnixNano())), "turns__echo")
		})
		if r := h.request("e", "tools/call", `{"name":"turns__echo","arguments":{}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("echo after the restart: %+v %s", r.Error, r.Result)
		}
		if !regexp.MustCompile(`upstream failed; trying again later.*server=turns.*more than 100 pages.*failures_in_a_row=1`).MatchString(p.log.String()) {
			t.Fatalf("the failed listing is not logged as the server's failure:\n%s", p.log)
		}
		if pages := p.countOf(t, "turns", `"method":"tools/list"`); pages > 103 {
			t.Fatalf("%d tools/list pages: the failed listing went on past the bound, or was retried", pages)
		}
	})
}

// A server whose tools/list never ends (a new nextCursor on every page of
// 40 tools with 2 KiB descriptions) is paged to the 100-page bound, counted
// as failed, closed, and started again later and later: over a minute it is
// listed about six times, not sixty, each wait at least three quarters of
// twice the one before, and the log says each failure, how many in a row,
// and when the next try is. The other server's tools work all the while,
// and the proxy reports the endless server as not listed, saying why.
// What the heap holds after a collection does not grow from one half
// minute to the next: the walk runs alone (not in parallel) so the heap
// is its own.
func TestWalk_EndlessCursorBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tools []string
		desc := strings.Repeat("d", 2048)
		for i := range 40 {
			tools = append(tools, fmt.Sprintf(`{"name":"t%d","description":%q,"inputSchema":{"type":"object"}}`, i, desc))
		}
		began := time.Now()
		p := newMemProxyWith(t, mustRules(t, allRules), nil,
			[2]string{"endless", `{"endlessCursor":true,"tools":[` + strings.Join(tools, ",") + `]}`},
			[2]string{"good", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		if r := h.request("l", "tools/list", `{}`); !strings.Contains(string(r.Result), `"good__echo"`) || strings.Contains(string(r.Result), "endless__") {
			t.Fatalf("host sees %s, want only good__echo", r.Result)
		}
		var startedAt []time.Duration // when each start was first seen
		var heap []uint64             // bytes in use after a collection, once a second
		calls := 0
		for tick := 0; time.Since(began) < time.Minute; tick++ {
			for n := p.countOf(t, "endless", `"method":"initialize"`); len(startedAt) < n; {
				startedAt = append(startedAt, time.Since(began))
			}
			if tick%10 == 0 {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				heap = append(heap, ms.HeapInuse)
			}
			if tick%50 == 0 {
				if r := h.request("e"+strconv.Itoa(tick), "tools/call", `{"name":"good__echo","arguments":{"tick":`+strconv.Itoa(tick)+`}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
					t.Fatalf("good__echo at %s: %+v %s", time.Since(began), r.Error, r.Result)
				}
				calls++
			}
			time.Sleep(100 * time.Millisecond)
		}
		pages := p.countOf(t, "endless", `"method":"tools/list"`)
		// About six starts in a minute (0, 1, 3, 7, 15, 31s; seven at most
		// with the jitter), each paged to the bound and no further.
		if n := len(startedAt); n < 4 || n > 7 {
			t.Fatalf("the endless server was started %d times in a minute, want 4 to 7 (by the backoff): at %v", n, startedAt)
		}
		if pages > 101*len(startedAt) {
			t.Fatalf("%d tools/list pages for %d starts: more than the 100-page bound each", pages, len(startedAt))
		}
		for i := 2; i < len(startedAt); i++ {
			gap := startedAt[i] - startedAt[i-1]
			if want := time.Duration(float64(time.Second) * 0.75 * float64(int(1)<<(i-1))); gap < want-200*time.Millisecond {
				t.Errorf("start %d came %s after the one before; want at least %s", i+1, gap, want)
			}
		}
		log := p.log.String()
		if !strings.Contains(log, "more than 100 pages") {
			t.Fatal("the page bound is not logged")
		}
		for n := 2; n <= len(startedAt)-1; n++ {
			m := regexp.MustCompile(`upstream failed; trying again later.*server=endless.*failures_in_a_row=` + strconv.Itoa(n) + ` in=(\S+) at=`).FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("no log line for failure %d in a row", n)
			}
			d, err := time.ParseDuration(m[1])
			if max := time.Second << (n - 1); err != nil || d > max || d < max*3/4 {
				t.Errorf("failure %d: next try in %s, want within a quarter under %s", n, m[1], max)
			}
		}
		if first, last := slices.Max(heap[:len(heap)/2]), slices.Max(heap[len(heap)/2:]); last > first+8<<20 {
			t.Errorf("the heap grew from %d KiB (first half minute) to %d KiB (second)", first>>10, last>>10)
		}
		t.Logf("starts at %v; %d pages; heap in use %d to %d KiB", startedAt, pages, slices.Min(heap)>>10, slices.Max(heap)>>10)
		if got := len(p.received(t, "good", "tools/call")); got != calls {
			t.Fatalf("the good server got %d calls, want %d", got, calls)
		}
		if err := p.Failed()["endless"]; err == nil || !strings.Contains(err.Error(), "more than 100 pages") {
			t.Fatalf("the endless server is not reported failed for its pages: %v", err)
		}
	})
}
