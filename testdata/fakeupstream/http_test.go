package fakeupstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hsrv is fakeup in HTTP mode, run in-process by runContext.
type hsrv struct {
	t      *testing.T
	url    string // http://ADDR/mcp
	base   string // http://ADDR
	record string
	stderr *syncBuffer
	c      *http.Client // does not follow redirects
}

const (
	acceptBoth = "application/json, text/event-stream"
	initMsg    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initResult = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fakeup","version":"1.0"}}}`
	initedMsg  = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// readAddrFile polls for the --addr-file until done yields or 10 s pass.
func readAddrFile(t *testing.T, path string, done <-chan struct{}, stderr *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil {
			return string(data)
		}
		select {
		case <-done:
			t.Fatalf("fakeup exited; stderr: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address file; stderr: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startHTTP(t *testing.T, scriptJSON string) *hsrv {
	t.Helper()
	dir := t.TempDir()
	h := &hsrv{t: t, record: filepath.Join(dir, "record.jsonl"), stderr: &syncBuffer{}}
	addrFile := filepath.Join(dir, "addr")
	args := []string{"--http", "127.0.0.1:0", "--addr-file", addrFile, "--record", h.record}
	if scriptJSON != "" {
		sp := filepath.Join(dir, "script.json")
		if err := os.WriteFile(sp, []byte(scriptJSON), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--script", sp)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	code := -1
	go func() {
		defer close(done)
		code = runContext(ctx, args, strings.NewReader(""), io.Discard, h.stderr, func(c int) { t.Errorf("exit(%d)", c) })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if code != 0 {
				t.Errorf("exit status %d; stderr: %s", code, h.stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("fakeup did not stop")
		}
	})
	addr := readAddrFile(t, addrFile, done, h.stderr)
	h.base = "http://" + addr
	h.url = h.base + "/mcp"
	h.c = &http.Client{
		Timeout:       20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(h.c.CloseIdleConnections)
	return h
}

// do sends a request; hdr holds "Name: value" strings.
func (h *hsrv) do(method, url, body string, hdr ...string) *http.Response {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, kv := range hdr {
		k, v, _ := strings.Cut(kv, ": ")
		req.Header.Add(k, v)
	}
	resp, err := h.c.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, url, err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// post POSTs a JSON-RPC message to the endpoint like a streamable client.
func (h *hsrv) post(sid, body string, hdr ...string) *http.Response {
	h.t.Helper()
	hdr = append(hdr, "Accept: "+acceptBoth, "Content-Type: application/json")
	if sid != "" {
		hdr = append(hdr, sessionHeader+": "+sid, "Mcp-Protocol-Version: 2025-11-25")
	}
	return h.do(http.MethodPost, h.url, body, hdr...)
}

// initialize runs the handshake and returns the session id.
func (h *hsrv) initialize() string {
	h.t.Helper()
	resp := h.post("", initMsg)
	if got := body(h.t, resp, 200); got != initResult {
		h.t.Fatalf("initialize: %s", got)
	}
	sid := resp.Header.Get(sessionHeader)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(sid) {
		h.t.Fatalf("session id %q", sid)
	}
	body(h.t, h.post(sid, initedMsg), 202)
	return sid
}

// body checks the status and returns the whole body.
func body(t *testing.T, resp *http.Response, status int) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %q", resp.StatusCode, status, b)
	}
	return string(b)
}

type event struct {
	id, name, data string
	hasID          bool
}

// events parses the response as an event stream; the channel closes at
// the end of the body.
func events(t *testing.T, resp *http.Response) <-chan event {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d content type %q", resp.StatusCode, ct)
	}
	ch := make(chan event, 100)
	go func() {
		defer close(ch)
		br := bufio.NewReader(resp.Body)
		var ev event
		var data []string
		seen := false
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				if seen {
					ev.data = strings.Join(data, "\n")
					ch <- ev
				}
				ev, data, seen = event{}, nil, false
				continue
			}
			seen = true
			field, val, _ := strings.Cut(line, ":")
			val = strings.TrimPrefix(val, " ")
			switch field {
			case "id":
				ev.id, ev.hasID = val, true
			case "event":
				ev.name = val
			case "data":
				data = append(data, val)
			}
		}
	}()
	return ch
}

// next returns the next event, failing on timeout or end of stream.
func next(t *testing.T, ch <-chan event) event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("timeout waiting for an event")
	}
	return event{}
}

// ended checks that the stream ends with no further event.
func ended(t *testing.T, ch <-chan event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("event stream did not end")
	}
}

// message returns the data of the next event, which must be a "message".
func message(t *testing.T, ch <-chan event) string {
	t.Helper()
	ev := next(t, ch)
	if ev.name != "message" {
		t.Fatalf("event %+v", ev)
	}
	return ev.data
}

func TestHTTPStreamableJSON(t *testing.T) {
	h := startHTTP(t, `{"tools":[{"name":"t1","inputSchema":{"type":"object"}}]}`)
	resp := h.post("", initMsg)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	sid := h.initialize()
	if sid == resp.Header.Get(sessionHeader) {
		t.Fatal("each initialize should start a new session")
	}

	if got := body(t, h.post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), 200); got != `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t1","inputSchema":{"type":"object"}}]}}` {
		t.Fatal(got)
	}
	args := `{"b":1,  "a":"<x>&"}`
	want := `{"jsonrpc":"2.0","id":"c-3","result":{"content":[{"type":"text","text":` + string(jsonString(args)) +
		`}],"structuredContent":{"arguments":` + args + `,"tool":"t1"}}}`
	if got := body(t, h.post(sid, toolCall(`"c-3"`, "t1", args)), 200); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}

	ping := `{"jsonrpc":"2.0","id":4,"method":"ping"}`
	body(t, h.post("", ping), 400)
	body(t, h.post("0123", ping), 404)
	if got := body(t, h.post(sid, "not json"), 400); !strings.Contains(got, "-32700") {
		t.Fatal(got)
	}
	body(t, h.do(http.MethodGet, h.base+"/other", ""), 404)
	body(t, h.do(http.MethodPut, h.url, "", sessionHeader+": "+sid), 405)

	body(t, h.do(http.MethodDelete, h.url, "", sessionHeader+": "+sid), 200)
	body(t, h.post(sid, ping), 404)
}

func TestHTTPResponseModes(t *testing.T) {
	const calls = `"calls":{"p":{"do":"progress","count":2,"intervalMs":1}}`
	progressCall := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"p","arguments":{},"_meta":{"progressToken":"tok"}}}`
	progress := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d,"total":2,"message":"step %d"}}`, i, i)
	}
	checkProgressStream := func(t *testing.T, ch <-chan event) {
		t.Helper()
		for i := 1; i <= 2; i++ {
			if got := message(t, ch); got != progress(i) {
				t.Fatal(got)
			}
		}
		if m := parse(t, message(t, ch)); string(m.ID) != "5" || m.Result == nil {
			t.Fatal(m)
		}
		ended(t, ch)
	}

	t.Run("auto", func(t *testing.T) {
		h := startHTTP(t, `{`+calls+`}`)
		sid := h.initialize()
		resp := h.post(sid, toolCall("1", "e", `{}`))
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("echo: content type %q", ct)
		}
		checkProgressStream(t, events(t, h.post(sid, progressCall)))
	})

	t.Run("sse", func(t *testing.T) {
		h := startHTTP(t, `{"http":{"responseMode":"sse"},`+calls+`}`)
		resp := h.post("", initMsg)
		sid := resp.Header.Get(sessionHeader)
		ch := events(t, resp)
		if got := message(t, ch); got != initResult {
			t.Fatal(got)
		}
		ended(t, ch)
		ch = events(t, h.post(sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		if got := message(t, ch); got != `{"jsonrpc":"2.0","id":2,"result":{}}` {
			t.Fatal(got)
		}
		ended(t, ch)
		checkProgressStream(t, events(t, h.post(sid, progressCall)))
	})

	t.Run("json", func(t *testing.T) {
		h := startHTTP(t, `{"http":{"responseMode":"json"},`+calls+`}`)
		sid := h.initialize()
		resp := h.post(sid, progressCall)
		if m := parse(t, body(t, resp, 200)); string(m.ID) != "5" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatal(m)
		}
		// The progress notifications were queued for the standalone stream.
		get := events(t, h.do(http.MethodGet, h.url, "", "Accept: text/event-stream", sessionHeader+": "+sid))
		for i := 1; i <= 2; i++ {
			if got := message(t, get); got != progress(i) {
				t.Fatal(got)
			}
		}
	})
}

func TestHTTPGetStreamRugpull(t *testing.T) {
	h := startHTTP(t, `{"tools":[{"name":"old"}],"toolsAfterRugpull":[{"name":"new"}],"calls":{"rp":{"do":"rugpull"}}}`)
	sid := h.initialize()
	get := events(t, h.do(http.MethodGet, h.url, "", "Accept: text/event-stream", sessionHeader+": "+sid))
	body(t, h.do(http.MethodGet, h.url, "", "Accept: text/event-stream", sessionHeader+": "+sid), 409)
	body(t, h.do(http.MethodGet, h.url, "", "Accept: text/event-stream"), 400)

	resp := h.post(sid, toolCall("2", "rp", `{}`))
	if m := parse(t, body(t, resp, 200)); string(m.ID) != "2" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatal(m)
	}
	if got := message(t, get); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Fatal(got)
	}
	if got := body(t, h.post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`), 200); got != `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"new"}]}}` {
		t.Fatal(got)
	}
	// Ending the session ends its stream.
	body(t, h.do(http.MethodDelete, h.url, "", sessionHeader+": "+sid), 200)
	ended(t, get)

	h2 := startHTTP(t, `{"http":{"noGetStream":true}}`)
	sid = h2.initialize()
	resp = h2.do(http.MethodGet, h2.url, "", "Accept: text/event-stream", sessionHeader+": "+sid)
	body(t, resp, 405)
	if a := resp.Header.Get("Allow"); a != "POST, DELETE" {
		t.Fatalf("Allow %q", a)
	}
}

func TestHTTPServerRequest(t *testing.T) {
	h := startHTTP(t, `{"calls":{"ask":{"do":"serverRequest","method":"sampling/createMessage","params":{"x":1}}}}`)
	sid := h.initialize()
	ch := events(t, h.post(sid, toolCall("7", "ask", `{}`)))
	if got := message(t, ch); got != `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"x":1}}` {
		t.Fatal(got)
	}
	reply := `{"jsonrpc":"2.0","id":0,"result":{"ok":true}}`
	body(t, h.post(sid, reply), 202)
	m := parse(t, message(t, ch))
	if string(m.ID) != "7" || !strings.Contains(string(m.Result), string(jsonString(reply))) {
		t.Fatalf("%s %s", m.ID, m.Result)
	}
	ended(t, ch)
}

func TestHTTPCancelledSleep(t *testing.T) {
	h := startHTTP(t, `{"calls":{"slow":{"do":"sleep","ms":30000}}}`)
	sid := h.initialize()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(toolCall("9", "slow", `{}`)))
		req.Header.Set("Accept", acceptBoth)
		req.Header.Set(sessionHeader, sid)
		resp, err := h.c.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("got status %d", resp.StatusCode)
		} else {
			err = nil
		}
		errc <- err
	}()
	// Wait until the call is in flight before cancelling it.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(readFile(t, h.record), `\"id\":9`) {
		if time.Now().After(deadline) {
			t.Fatal("call never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Recorded is not yet sleeping: a cancel that comes first names no
	// request and is ignored, so it is sent again until the call ends.
	deadline = time.Now().Add(10 * time.Second)
	for {
		body(t, h.post(sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`), 202)
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("cancelled call still open")
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

func TestHTTPLegacySSE(t *testing.T) {
	h := startHTTP(t, `{"http":{"mode":"sse"},"toolsAfterRugpull":[],"calls":{"rp":{"do":"rugpull"}}}`)
	// A streamable client's first POST fails, so it falls back to GET.
	body(t, h.post("", initMsg), 405)

	resp := h.do(http.MethodGet, h.url, "", "Accept: text/event-stream")
	ch := events(t, resp)
	ev := next(t, ch)
	if ev.name != "endpoint" || !regexp.MustCompile(`^/message\?sessionId=[0-9a-f]{32}$`).MatchString(ev.data) {
		t.Fatalf("endpoint event %+v", ev)
	}
	endpoint := h.base + ev.data
	post := func(msg string) {
		t.Helper()
		body(t, h.do(http.MethodPost, endpoint, msg, "Content-Type: application/json"), 202)
	}
	post(initMsg)
	if got := message(t, ch); got != initResult {
		t.Fatal(got)
	}
	post(initedMsg)
	post(toolCall("2", "echo", `{"a":1}`))
	if m := parse(t, message(t, ch)); string(m.ID) != "2" || !strings.Contains(string(m.Result), `"arguments":{"a":1}`) {
		t.Fatal(m)
	}
	post(toolCall("3", "rp", `{}`))
	if got := message(t, ch); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Fatal(got)
	}
	if m := parse(t, message(t, ch)); string(m.ID) != "3" {
		t.Fatal(m)
	}

	body(t, h.do(http.MethodPost, h.base+"/message?sessionId=0123", initMsg), 404)
	body(t, h.do(http.MethodPost, h.base+"/message", initMsg), 400)

	// Closing the stream ends the session.
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := h.do(http.MethodPost, endpoint, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
		r.Body.Close()
		if r.StatusCode == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session still alive: %d", r.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPRequireBearer(t *testing.T) {
	h := startHTTP(t, `{"http":{"requireBearer":"s3cret"}}`)
	resp := h.post("", initMsg)
	body(t, resp, 401)
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Fatalf("WWW-Authenticate %q", got)
	}
	body(t, h.post("", initMsg, "Authorization: Bearer wrong"), 401)
	body(t, h.post("", initMsg, "Authorization: Basic czNjcmV0"), 401)
	if got := body(t, h.post("", initMsg, "Authorization: Bearer s3cret"), 200); got != initResult {
		t.Fatal(got)
	}
}

func TestHTTPRedirect(t *testing.T) {
	target := startHTTP(t, "")
	h := startHTTP(t, `{"http":{"redirect":`+string(jsonString(target.url+"?from=a"))+`}}`)
	for _, resp := range []*http.Response{
		h.post("", initMsg, "Authorization: Bearer tok"),
		h.do(http.MethodGet, h.url, "", "Accept: text/event-stream"),
	} {
		if got := body(t, resp, 307); got != "" {
			t.Fatalf("body %q", got)
		}
		if loc := resp.Header.Get("Location"); loc != target.url+"?from=a" {
			t.Fatalf("Location %q", loc)
		}
	}
	if !strings.Contains(readFile(t, h.record), `"Authorization":["Bearer tok"]`) {
		t.Fatal(readFile(t, h.record))
	}
	if got := readFile(t, target.record); got != "" {
		t.Fatalf("target got %q", got)
	}

	h308 := startHTTP(t, `{"http":{"redirect":"http://127.0.0.1:1/x","redirectStatus":308}}`)
	body(t, h308.post("", initMsg), 308)
}

func TestHTTPStatusFor(t *testing.T) {
	h := startHTTP(t, `{"http":{"statusFor":{"tools/call":500,"GET":503}}}`)
	sid := h.initialize()
	resp := h.post(sid, toolCall("2", "x", `{}`))
	if got := body(t, resp, 500); got != "fakeup: scripted status 500\n" {
		t.Fatalf("%q", got)
	}
	body(t, h.post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`), 200)
	body(t, h.do(http.MethodGet, h.url, "", sessionHeader+": "+sid), 503)
}

func TestHTTPEndStreamFor(t *testing.T) {
	h := startHTTP(t, `{"http":{"endStreamFor":["p","e"]},"calls":{"p":{"do":"progress","count":3,"intervalMs":1}}}`)
	sid := h.initialize()
	resp := h.post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"p","_meta":{"progressToken":1}}}`)
	if !resp.Close {
		t.Error("connection should close")
	}
	ch := events(t, resp)
	if got := message(t, ch); !strings.Contains(got, `"progress":1,`) {
		t.Fatal(got)
	}
	ended(t, ch)
	// Without progress the stream ends before the response.
	ended(t, events(t, h.post(sid, toolCall("3", "e", `{}`))))
	// Other tools are unaffected.
	body(t, h.post(sid, toolCall("4", "other", `{}`)), 200)
}

func TestHTTPExpireSessionAfter(t *testing.T) {
	h := startHTTP(t, `{"http":{"expireSessionAfter":3}}`)
	sid := h.initialize() // requests 1 and 2
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	body(t, h.post(sid, ping), 200)
	body(t, h.post(sid, ping), 404)
	// A new session works again.
	sid2 := h.initialize()
	if sid2 == sid {
		t.Fatal("same session id")
	}
	body(t, h.post(sid2, ping), 200)
	body(t, h.post(sid2, ping), 404)
}

func TestHTTPRecord(t *testing.T) {
	h := startHTTP(t, `{"http":{"slowHeadersMs":100}}`)
	start := time.Now()
	sid := h.initialize()
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("two slow requests took %v", d)
	}
	body(t, h.do(http.MethodGet, h.url+"?x=1&y=%20", "", "Accept: text/event-stream", "X-Multi: a", "X-Multi: b", "Authorization: Bearer zz"), 400)

	var recs []httpRecord
	for line := range strings.Lines(readFile(t, h.record)) {
		var r httpRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("record line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Method != "POST" || r.Path != "/mcp" || r.Query != "" || r.Body != initMsg || !strings.HasPrefix(h.base, "http://"+r.Host) ||
		strings.Join(r.Headers["Accept"], "|") != acceptBoth || r.Headers["Content-Type"][0] != "application/json" || r.Headers[sessionHeader] != nil {
		t.Fatalf("%+v", r)
	}
	if r = recs[1]; r.Body != initedMsg || r.Headers[sessionHeader][0] != sid || r.Headers["Mcp-Protocol-Version"][0] != "2025-11-25" {
		t.Fatalf("%+v", r)
	}
	if r = recs[2]; r.Method != "GET" || r.Query != "x=1&y=%20" || r.Body != "" ||
		strings.Join(r.Headers["X-Multi"], "|") != "a|b" || r.Headers["Authorization"][0] != "Bearer zz" {
		t.Fatalf("%+v", r)
	}
}

func TestHTTPNoSessionPrimeEvent(t *testing.T) {
	h := startHTTP(t, `{"http":{"noSession":true,"primeEvent":true,"responseMode":"sse","path":"/x/rpc"}}`)
	h.url = h.base + "/x/rpc"
	resp := h.post("", initMsg)
	if sid := resp.Header.Get(sessionHeader); sid != "" {
		t.Fatalf("session id %q", sid)
	}
	ch := events(t, resp)
	if ev := next(t, ch); ev != (event{id: "1", hasID: true}) {
		t.Fatalf("priming event %+v", ev)
	}
	if got := message(t, ch); got != initResult {
		t.Fatal(got)
	}
	ch = events(t, h.post("", `{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	if ev := next(t, ch); ev.id != "2" || ev.data != "" {
		t.Fatalf("priming event %+v", ev)
	}
	message(t, ch)
	body(t, h.do(http.MethodDelete, h.url, ""), 405)
	body(t, h.post("", initMsg), 200)
	body(t, h.do(http.MethodGet, h.base+"/mcp", ""), 404)
}

func TestHTTPBadScript(t *testing.T) {
	for _, sc := range []string{
		`{"http":{"mode":"websocket"}}`,
		`{"http":{"responseMode":"xml"}}`,
		`{"http":{"statusFor":{"ping":42}}}`,
		`{"http":{"redirectStatus":200}}`,
		`{"http":{"path":"mcp"}}`,
	} {
		sp := filepath.Join(t.TempDir(), "s.json")
		if err := os.WriteFile(sp, []byte(sc), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr syncBuffer
		if code := runContext(context.Background(), []string{"--http", "127.0.0.1:0", "--script", sp}, nil, io.Discard, &stderr, nil); code != 2 {
			t.Errorf("%s: exit %d", sc, code)
		}
	}
	var stderr syncBuffer
	if code := run([]string{"--addr-file", "x"}, nil, io.Discard, &stderr, nil); code != 2 {
		t.Errorf("--addr-file without --http: exit %d", code)
	}
}

// TestHTTPProcess runs the real program: address file, SIGTERM, crash.
func TestHTTPProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGTERM")
	}
	dir := t.TempDir()
	sp := filepath.Join(dir, "script.json")
	if err := os.WriteFile(sp, []byte(`{"calls":{"boom":{"do":"crash","stderr":"dying\n"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	startProc := func(name string) (*exec.Cmd, *hsrv, <-chan struct{}) {
		addrFile := filepath.Join(dir, name+".addr")
		h := &hsrv{t: t, stderr: &syncBuffer{}, c: &http.Client{Timeout: 20 * time.Second}}
		cmd := exec.Command(os.Args[0], "--http", "127.0.0.1:0", "--addr-file", addrFile, "--script", sp)
		cmd.Env = append(os.Environ(), beMainEnv+"=1", "GORACE=atexit_sleep_ms=0")
		cmd.Stderr = h.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-done
		})
		h.base = "http://" + readAddrFile(t, addrFile, done, h.stderr)
		h.url = h.base + "/mcp"
		return cmd, h, done
	}
	waitExit := func(cmd *exec.Cmd, done <-chan struct{}) int {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("fakeup did not exit")
		}
		return cmd.ProcessState.ExitCode()
	}

	cmd, h, done := startProc("term")
	h.initialize()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(cmd, done); code != 0 {
		t.Fatalf("SIGTERM: exit %d; stderr %s", code, h.stderr.String())
	}
	if !strings.Contains(h.stderr.String(), "fakeup: listening on "+h.url) {
		t.Fatalf("stderr %q", h.stderr.String())
	}

	cmd, h, done = startProc("crash")
	sid := h.initialize()
	req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(toolCall("2", "boom", `{}`)))
	req.Header.Set(sessionHeader, sid)
	if resp, err := h.c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("crash answered %d", resp.StatusCode)
	}
	if code := waitExit(cmd, done); code != 3 {
		t.Fatalf("crash: exit %d", code)
	}
	if !strings.Contains(h.stderr.String(), "dying") {
		t.Fatal(h.stderr.String())
	}
}
