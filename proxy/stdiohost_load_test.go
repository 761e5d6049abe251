package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// The stdio host under load, for the race detector: calls on the fast path
// and through mcp-go, lists and reads answered with the server's bytes, and
// cancellations, all at once. Every request not cancelled is answered with
// the server's own result; no cancelled one is answered.
func TestServeStdio_ConcurrentCancelsAndServersBytes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	const result = `{"content":[{"type":"text","text":"a <b>"}],"isError":false,"x":1}`
	script := `{"tools":[{"name":"fast","inputSchema":{"type":"object"},"x-b":1,"description":"<"},{"name":"slow","inputSchema":{"type":"object"}}],
"calls":{"fast":{"do":"result","result":` + result + `},"slow":{"do":"sleep","ms":60000}}}`
	led, lease, rules := testLedgerAndRules(t, dir, "db")
	p, err := New(ctx, Options{
		Upstreams: []up.Spec{fakeupSpec(t, "db", script, filepath.Join(dir, "db.record"))},
		Gate:      gate.New(rules),
		Ledger:    led,
		Lease:     lease,
		PinTOFU:   true,
		Limits:    roomyLimits(1000, 100),
		LogDir:    filepath.Join(dir, "logs"),
		Version:   "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- p.ServeStdio(ctx, inR, outW); outW.Close() }()
	var wmu sync.Mutex
	send := func(line string) {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Error(err)
		}
	}
	got := map[string]string{} // id -> result or error
	var gmu sync.Mutex
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method != "" || m.ID == nil {
				continue
			}
			gmu.Lock()
			got[string(m.ID)] = string(m.Result) + string(m.Error)
			gmu.Unlock()
		}
	}()
	waitFor := func(id string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			gmu.Lock()
			r, ok := got[id]
			gmu.Unlock()
			if ok {
				return r
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("no answer to %s", id)
		return ""
	}
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	waitFor(`"init"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta := ""
			if i%2 == 1 {
				meta = `,"_meta":{"x-trace":"1"}` // through mcp-go
			}
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"f%d","method":"tools/call","params":{"name":"db__fast","arguments":{}%s}}`, i, meta))
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":"tools/call","params":{"name":"db__slow","arguments":{}%s}}`, i, meta))
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"l%d","method":"tools/list"}`, i))
		}()
	}
	wg.Wait()
	for i := range 8 {
		if r := waitFor(fmt.Sprintf(`"f%d"`, i)); r != result {
			t.Errorf("f%d: %s; want the server's result", i, r)
		}
		if r := waitFor(fmt.Sprintf(`"l%d"`, i)); !strings.Contains(r, `{"name":"db__fast","inputSchema":{"type":"object"},"x-b":1,"description":"<"}`) {
			t.Errorf("l%d: %s; want the server's definition", i, r)
		}
	}
	// Every slow call is in flight once the ledger has it; then cancel them.
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, _ := led.Calls(ctx, ledger.CallFilter{Limit: 100})
		n := 0
		for _, r := range rows {
			if r.Exposed == "db__slow" {
				n++
			}
		}
		if n == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slow calls recorded", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 8 {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s%d","reason":"r%d"}}`, i, i))
	}
	send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	waitFor(`"last"`)
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	<-readDone
	for i := range 8 {
		if r, ok := got[fmt.Sprintf(`"s%d"`, i)]; ok {
			t.Errorf("cancelled s%d was answered: %s", i, r)
		}
	}
}
