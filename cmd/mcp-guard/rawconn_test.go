package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawConn is one JSON-RPC connection whose messages the test sees as the
// bytes that arrived: a line of stdio, a JSON body or an event's data. It is
// the host of the fidelity matrix, talking to a server directly or to
// mcp-guard, with no SDK between.
type rawConn struct {
	t    *testing.T
	in   chan string // every message received, in order
	send func(msg string)
	stop func()
	// listen, on streamable HTTP, opens the session's standalone (GET)
	// stream: its events are messages received too.
	listen func()
}

// exchange sends a request with id and returns every message received up to
// and including its response.
func (c *rawConn) exchange(id, msg string) []string {
	c.t.Helper()
	c.send(msg)
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("the connection ended before the response to %s; got %q", id, got)
			}
			got = append(got, m)
			var env struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(m), &env) == nil && env.Method == "" && string(env.ID) == id {
				return got
			}
		case <-timeout:
			c.t.Fatalf("no response to %s in 30s; got %q", id, got)
		}
	}
}

// stdioRawConn runs cmd and speaks JSON-RPC lines on its stdin and stdout.
func stdioRawConn(t *testing.T, cmd *exec.Cmd, stderr io.Writer) *rawConn {
	t.Helper()
	cmd.Stderr = stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	return pipeRawConn(t, cmd.Args[0], w, r, func() {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

// stdioRawConn is a raw connection to `mcp-guard serve --config cfg` on
// stdio: in this process, or the binary when the env asks for it.
func (e *env) stdioRawConn(t *testing.T, cfg string) *rawConn {
	t.Helper()
	if !e.inProcess() {
		return stdioRawConn(t, e.serveCmd(cfg), &lockedBuffer{})
	}
	w, r := e.serveHere(&lockedBuffer{}, "serve", "--config", cfg)
	return pipeRawConn(t, "mcp-guard serve", w, r, func() {})
}

// pipeRawConn speaks JSON-RPC lines to name on w and reads them from r;
// its stop closes w, then waits for name's end with wait.
func pipeRawConn(t *testing.T, name string, w io.WriteCloser, r io.Reader, wait func()) *rawConn {
	c := &rawConn{t: t, in: make(chan string, 1024)}
	go func() {
		defer close(c.in)
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if l := strings.TrimRight(line, "\r\n"); l != "" {
				c.in <- l
			}
			if err != nil {
				return
			}
		}
	}()
	c.send = func(msg string) {
		if _, err := io.WriteString(w, msg+"\n"); err != nil {
			t.Fatalf("write to %s: %v", name, err)
		}
	}
	c.stop = func() {
		w.Close()
		wait()
	}
	t.Cleanup(c.stop)
	return c
}

// streamableRawConn speaks streamable HTTP to endpoint: each message is
// POSTed; a JSON answer or every event of an event-stream answer is a
// message received. The session ID of the initialize answer and the
// protocol version it negotiated are sent on every later request.
func streamableRawConn(t *testing.T, endpoint string) *rawConn {
	t.Helper()
	c := &rawConn{t: t, in: make(chan string, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var sid, version string
	var streams sync.WaitGroup
	var post func(msg string)
	c.send = func(msg string) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(msg), &m)
		if m.Method == "" || len(m.ID) == 0 || m.Method == "initialize" {
			post(msg)
			return
		}
		// A request's answer may wait for the host (a server's request
		// relayed on another stream): the POST is not waited for.
		streams.Add(1)
		go func() {
			defer streams.Done()
			post(msg)
		}()
	}
	post = func(msg string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mu.Lock()
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		mu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("POST %s: %v", endpoint, err)
			}
			return
		}
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			mu.Lock()
			sid = s
			mu.Unlock()
		}
		if resp.StatusCode == http.StatusAccepted {
			resp.Body.Close()
			return
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("POST %s: HTTP %d %s", endpoint, resp.StatusCode, b)
			return
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := strings.TrimSpace(string(b))
			if m == "" {
				// a notification answered 200 with no body, not 202
				t.Logf("POST %s: HTTP 200 with no body for %.80s", endpoint, msg)
				return
			}
			noteVersion(m, &mu, &version)
			c.in <- m
			return
		}
		streams.Add(1)
		go func() {
			defer streams.Done()
			defer resp.Body.Close()
			readEventData(resp.Body, func(_, data string) {
				noteVersion(data, &mu, &version)
				c.in <- data
			})
		}()
	}
	c.listen = func() {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
		req.Header.Set("Accept", "text/event-stream")
		mu.Lock()
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", version)
		mu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", endpoint, err, resp)
		}
		streams.Add(1)
		go func() {
			defer streams.Done()
			defer resp.Body.Close()
			readEventData(resp.Body, func(_, data string) { c.in <- data })
		}()
	}
	c.stop = func() {
		cancel()
		streams.Wait()
	}
	t.Cleanup(c.stop)
	return c
}

// noteVersion records the protocol version an initialize answer negotiated.
func noteVersion(msg string, mu *sync.Mutex, version *string) {
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(msg), &r) == nil && r.Result.ProtocolVersion != "" {
		mu.Lock()
		*version = r.Result.ProtocolVersion
		mu.Unlock()
	}
}

// sseRawConn speaks the legacy HTTP+SSE transport (2024-11-05): a GET on
// endpoint opens the stream whose first event names where to POST; every
// message event on the stream is a message received.
func sseRawConn(t *testing.T, endpoint string) *rawConn {
	t.Helper()
	c := &rawConn{t: t, in: make(chan string, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET %s: %v %v", endpoint, err, resp)
	}
	post := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.in)
		defer resp.Body.Close()
		readEventData(resp.Body, func(event, data string) {
			if event == "endpoint" {
				post <- data
				return
			}
			c.in <- data
		})
	}()
	var target string
	select {
	case p := <-post:
		base, _ := url.Parse(endpoint)
		ref, err := url.Parse(p)
		if err != nil {
			t.Fatalf("SSE endpoint event %q: %v", p, err)
		}
		target = base.ResolveReference(ref).String()
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("no endpoint event on %s", endpoint)
	}
	c.send = func(msg string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", target, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: HTTP %d", target, resp.StatusCode)
		}
	}
	c.stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(c.stop)
	return c
}

// readEventData calls f with the event type and data of each server-sent
// event in r, until r ends. Events with empty data (priming) are skipped.
func readEventData(r io.Reader, f func(event, data string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if d := strings.Join(data, "\n"); d != "" {
				f(event, d) // an event with no data primes a resumable stream
			}
			event, data = "", nil
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			d := strings.TrimPrefix(line, "data:")
			data = append(data, strings.TrimPrefix(d, " "))
		}
	}
}

// jsonrpcInit is an initialize request at version with no capabilities.
func jsonrpcInit(version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"fidelity-matrix","version":"1"}}}`, version)
}
