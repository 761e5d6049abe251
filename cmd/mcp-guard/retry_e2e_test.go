package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The retry loops a server can drive, each against the real binary and a
// hostile fake upstream: what the server received shows how often
// mcp-guard came back, and it must be by the backoff (1s, 2s, 4s … with up
// to a quarter less at random, at most a minute), not at a steady rate.

// A server whose tools/list never ends (a new nextCursor on every page of
// 40 tools with 2 KiB descriptions) is paged to the 100-page bound, counted
// as failed, closed, and started again later and later: over a minute it is
// listed about six times, not sixty. The other server's tools work all the
// while, and serve's memory stays bounded.
func TestRetry_EndlessCursorBacksOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var tools []string
	desc := strings.Repeat("d", 2048)
	for i := range 40 {
		tools = append(tools, fmt.Sprintf(`{"name":"t%d","description":%q,"inputSchema":{"type":"object"}}`, i, desc))
	}
	endless := e.fake("endless", `{"endlessCursor":true,"tools":[`+strings.Join(tools, ",")+`]}`)
	good := e.fake("good", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	cfg := e.config(endless, good, allowAll)
	began := time.Now()
	h := e.connect(cfg, "")
	if got := h.toolNames(t); !slices.Equal(got, []string{"good__echo"}) {
		t.Fatalf("host sees %v, want only good__echo", got)
	}

	starts := func() int { return countLines(e.record("endless"), `"method":"initialize"`) }
	var startedAt []time.Duration // when each start was first seen
	var rss []int                 // serve's resident memory, KiB, once a second
	calls := 0
	for tick := 0; time.Since(began) < time.Minute; tick++ {
		for n := starts(); len(startedAt) < n; {
			startedAt = append(startedAt, time.Since(began))
		}
		if tick%10 == 0 {
			rss = append(rss, residentKiB(t, h.cmd.Process.Pid))
		}
		if tick%50 == 0 {
			res, err := h.call(t, "good__echo", map[string]any{"tick": tick})
			if err != nil || res.IsError {
				t.Fatalf("good__echo at %s: %v %v", time.Since(began).Round(time.Second), err, resultText(res))
			}
			calls++
		}
		time.Sleep(100 * time.Millisecond)
	}
	pages := countLines(e.record("endless"), `"method":"tools/list"`)
	t.Logf("endless: started at %v; %d pages in all; serve's RSS (KiB) %v", startedAt, pages, rss)

	// About six starts in a minute (0, 1, 3, 7, 15, 31s; seven at most with
	// the jitter), each paged to the bound and no further.
	if n := len(startedAt); n < 4 || n > 7 {
		t.Fatalf("the endless server was started %d times in a minute, want 4 to 7 (by the backoff): at %v", n, startedAt)
	}
	if pages > 101*len(startedAt) {
		t.Fatalf("%d tools/list pages for %d starts: more than the 100-page bound each", pages, len(startedAt))
	}
	// Each wait is at least three quarters of twice the one before.
	for i := 2; i < len(startedAt); i++ {
		gap, before := startedAt[i]-startedAt[i-1], startedAt[i-1]-startedAt[i-2]
		if want := time.Duration(float64(time.Second) * 0.75 * float64(int(1)<<(i-1))); gap < want-200*time.Millisecond {
			t.Errorf("start %d came %s after the one before (which came %s after its own); want at least %s", i+1, gap, before, want)
		}
	}
	// The log says each failure, how many in a row, and when the next try is.
	log := h.stderr.String()
	if !strings.Contains(log, "more than 100 pages") {
		t.Fatalf("the page bound is not logged:\n%s", tail(log, 3000))
	}
	for n := 2; n <= len(startedAt)-1; n++ {
		re := regexp.MustCompile(`upstream failed; trying again later.*server=endless.*failures_in_a_row=` + strconv.Itoa(n) + ` in=(\S+) at=`)
		m := re.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("no log line for failure %d in a row:\n%s", n, tail(log, 3000))
		}
		d, err := time.ParseDuration(m[1])
		if max := time.Second << (n - 1); err != nil || d > max || d < max*3/4 {
			t.Errorf("failure %d: next try in %s, want within a quarter under %s", n, m[1], max)
		}
	}
	// Memory: what the later cycles hold is no more than the first ones did
	// plus a margin; it does not grow with each listing.
	first, last := slices.Max(rss[:len(rss)/2]), slices.Max(rss[len(rss)/2:])
	if last > first+24<<10 {
		t.Errorf("serve's RSS grew from %d KiB (first half minute) to %d KiB (second)", first, last)
	}
	// What reached the good server: every call.
	if got := len(e.calls("good")); got != calls {
		t.Fatalf("the good server got %d calls, want %d", got, calls)
	}
	// mcp-guard tools counts the endless server as failed.
	out, code := e.mcpGuard("tools", "--config", cfg)
	if code != 1 || !strings.Contains(out, "server endless: not listed:") || !strings.Contains(out, "more than 100 pages") || !strings.Contains(out, "good__echo") {
		t.Fatalf("tools (exit %d):\n%s", code, out)
	}
}

// A 2026-07-28 url server that acknowledges each subscriptions/listen and
// ends it at once is listened to again after 1s, 2s, 4s (not every second,
// as when an acknowledged listen started the waits over), and the listing
// each new listen asks for is paced too.
func TestRetry_EndedListenBacksOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.modernHTTPUpFlags("dep", "2026-07-28", []string{"--end-listen"}), modernUpRules)
	h := e.connect(cfg, "")
	eventually(t, "the first listen", func() bool { return slices.Contains(e.methodsSent("dep"), "subscriptions/listen") })
	time.Sleep(11 * time.Second)
	sent := e.methodsSent("dep")
	// Listens at 0, 1, 3 and 7s (up to a quarter sooner; the fifth at
	// 11.25s at the soonest); each acknowledged one after the first asks
	// for a listing, answered at 1, 3 and 7s at most.
	if n := countLines(sent, "subscriptions/listen"); n < 3 || n > 5 {
		t.Fatalf("%d listens in 11s, want 3 to 5: %v", n, sent)
	}
	if n := countLines(sent, "tools/list"); n > 5 {
		t.Fatalf("%d tools listings in 11s, want at most 5: %v", n, sent)
	}
	if res, err := h.call(t, "dep__echo", map[string]any{"q": "still"}); err != nil || res.IsError {
		t.Fatalf("echo: %v %v", err, resultText(res))
	}
}

// countLines counts the lines that contain s.
func countLines(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// residentKiB is a process's resident memory (VmRSS), in KiB.
func residentKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
