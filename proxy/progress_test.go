package proxy

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A relay passes a burst untouched and in order, coalesces past the rate,
// keeps values from going back, and delivers the latest on finish.
func TestProgressRelay_BurstCoalesceFinish(t *testing.T) {
	var mu sync.Mutex
	var got []string
	r := &progressRelay{tokens: progressBurst, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	r.send = func(p map[string]any) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(p["progress"].(json.RawMessage)))
		return nil
	}
	began := time.Now()
	go r.run(func(err error) { t.Error(err) })
	for i := 1; i <= 1000; i++ {
		r.offer(json.RawMessage(fmt.Sprintf(`{"progressToken":"x","progress":%d}`, i)))
		if i == 500 {
			r.offer(json.RawMessage(`{"progress":10}`)) // goes back: dropped
		}
	}
	time.Sleep(30 * time.Millisecond)
	passed, dropped, refused := r.finish()
	bound := progressBurst + int(time.Since(began).Seconds()*progressRate) + 2
	mu.Lock()
	defer mu.Unlock()
	if refused != 1 || passed != len(got) || passed+dropped != 1000 {
		t.Fatalf("passed %d dropped %d refused %d; host got %d", passed, dropped, refused, len(got))
	}
	if len(got) < progressBurst || len(got) > bound {
		t.Fatalf("host got %d: %v", len(got), got)
	}
	for i := range progressBurst {
		if got[i] != fmt.Sprint(i+1) {
			t.Fatalf("burst not passed in order: %v", got)
		}
	}
	if got[len(got)-1] != "1000" {
		t.Fatalf("last delivered %s, want 1000", got[len(got)-1])
	}
	r.offer(json.RawMessage(`{"progress":2000}`)) // after finish: ignored
	if len(got) != passed {
		t.Fatal("delivered after finish")
	}
}

func TestProgressParams(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"progressToken":"t","progress":1.5,"total":3,"message":"ok","_meta":{"a":1}}`, `{"message":"ok","progress":1.5,"total":3}`},
		{`{"progress":2,"total":"3","message":{"x":1}}`, `{"progress":2}`},
		{`{"progress":2,"message":"a\u001b[31mb\u202ec"}`, `{"message":"a\\u{001B}[31mb\\u{202E}c","progress":2}`},
		{`{"progress":"2"}`, ``},
		{`{"progress":null}`, ``},
		{`{"total":2}`, ``},
	} {
		out, _, ok := progressParams(json.RawMessage(c.in))
		got := ""
		if ok {
			b, _ := json.Marshal(out)
			got = string(b)
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}
