package proxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A relay passes a burst untouched and in order, coalesces past the rate,
// keeps values from going back, passes the latest one waiting when the
// rate allows, and delivers the latest on finish. It runs in a synctest
// bubble: the rate's clock is the bubble's, so what has passed at each
// point is exact.
func TestProgressRelay_BurstCoalesceFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		r := &progressRelay{tokens: progressBurst, wake: make(chan struct{}, 1), exited: make(chan struct{})}
		r.send = func(p json.RawMessage) error {
			mu.Lock()
			defer mu.Unlock()
			v, _ := member(p, "progress")
			got = append(got, string(v))
			return nil
		}
		delivered := func() []string {
			synctest.Wait() // the relay has sent all it may and waits
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(got)
		}
		go r.run(func(err error) { t.Error(err) })
		for i := 1; i <= 1000; i++ {
			r.offer(json.RawMessage(fmt.Sprintf(`{"progressToken":"x","progress":%d}`, i)))
			if i == 500 {
				r.offer(json.RawMessage(`{"progress":10}`)) // goes back: dropped
			}
		}
		// No time has passed: the burst, in order, and nothing more.
		want := make([]string, progressBurst)
		for i := range want {
			want[i] = fmt.Sprint(i + 1)
		}
		if d := delivered(); !slices.Equal(d, want) {
			t.Fatalf("with no time passed the host got %v, want the burst %v", d, want)
		}
		// One token's time later the latest waiting one passes, only it.
		time.Sleep(time.Second / progressRate)
		if d := delivered(); !slices.Equal(d, append(want, "1000")) {
			t.Fatalf("a token later the host got %v, want the burst and 1000", d[progressBurst:])
		}
		// Over the rate again; finish delivers the one waiting at once.
		r.offer(json.RawMessage(`{"progress":1001}`))
		r.offer(json.RawMessage(`{"progress":1002}`))
		if d := delivered(); len(d) != progressBurst+1 {
			t.Fatalf("over the rate the host got %v", d[progressBurst:])
		}
		before := time.Now()
		passed, dropped, refused := r.finish()
		if waited := time.Since(before); waited != 0 { // the bubble's clock: exact
			t.Fatalf("finish waited %s for the rate before delivering the latest", waited)
		}
		d := delivered()
		if !slices.Equal(d, append(want, "1000", "1002")) {
			t.Fatalf("after finish the host got %v, want the burst, 1000 and 1002", d[progressBurst:])
		}
		if refused != 1 || passed != len(d) || passed+dropped != 1002 {
			t.Fatalf("passed %d dropped %d refused %d; host got %d", passed, dropped, refused, len(d))
		}
		r.offer(json.RawMessage(`{"progress":2000}`)) // after finish: ignored
		if len(delivered()) != passed {
			t.Fatal("delivered after finish")
		}
	})
}

// Progress params reach the host as the server wrote them (member order,
// its own escapes), the message replaced in place only when escaping
// changes it; params with anything else are rebuilt from what may pass.
func TestProgressParams(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"progress":1,"total":3,"progressToken":"pt-1"}`, `{"progress":1,"total":3,"progressToken":"pt-1"}`},
		{`{"progressToken":7,"message":"step \u00e9 <1>","progress":0.5,"total":100}`, `{"progressToken":7,"message":"step \u00e9 <1>","progress":0.5,"total":100}`},
		{"{\"total\": 3,\n \"progress\": 2}", `{"total":3,"progress":2}`}, // on one line
		{`{"progress":2,"message":"a\u001b[31mb\u202ec","total":9}`, `{"progress":2,"message":"a\\u{001B}[31mb\\u{202E}c","total":9}`},
		{`{"progressToken":"t","progress":1.5,"total":3,"message":"ok","_meta":{"a":1}}`, `{"message":"ok","progress":1.5,"total":3}`},
		{`{"progress":1,"message":"a","message":"\u001b"}`, `{"message":"\\u{001B}","progress":1}`},
		{`{"progress":1,"Message":"\u001b"}`, `{"message":"\\u{001B}","progress":1}`},
		{`{"progress":2,"total":"3","message":{"x":1}}`, `{"progress":2}`},
		{`{"progress":"2"}`, ``},
		{`{"progress":null}`, ``},
		{`{"total":2}`, ``},
	} {
		out, _, ok := progressParams(json.RawMessage(c.in))
		got := ""
		if ok {
			got = string(out)
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}
