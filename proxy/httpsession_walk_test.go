package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// openHTTPSessions is how many host sessions started over HTTP the ledger
// holds open.
func (m *memProxy) openHTTPSessions(t *testing.T) int {
	t.Helper()
	evs, err := m.led.Events(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, ev := range evs {
		switch {
		case ev.Kind == "session.started" && strings.Contains(string(ev.Body), `"host":"http `):
			open[ev.Subject] = true
		case ev.Kind == "session.ended":
			delete(open, ev.Subject)
		}
	}
	return len(open)
}

// status is resp's status code, its body read and closed.
func status(resp *http.Response) int {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// DELETE ends a 2025 host's session: its GET stream closes, its ledger
// session ends, and a request naming it after gets 404, while another
// session goes on. A DELETE naming no live session gets 404 and ends
// nothing; a method the endpoint does not have gets 405.
func TestWalk_HTTPDeleteEndsTheSession(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, dbRules, [2]string{"db", confirmTools})
		ep := startHTTPHost(t, p.Proxy)
		a, b := ep.session(initBody), ep.session(initBody)
		if n := p.openHTTPSessions(t); n != 2 {
			t.Fatalf("%d HTTP host sessions open in the ledger, want 2", n)
		}
		get := a.do(http.MethodGet, "", nil)
		if get.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: HTTP %d", get.StatusCode)
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			io.Copy(io.Discard, get.Body)
			get.Body.Close()
		}()

		put := a.do(http.MethodPut, "{}", nil)
		if code := status(put); code != http.StatusMethodNotAllowed || put.Header.Get("Allow") != "GET, POST, DELETE" {
			t.Fatalf("PUT: HTTP %d, Allow %q; want 405 naming the methods there are", code, put.Header.Get("Allow"))
		}
		nobody := &httpHost{t: t, url: ep.url, client: ep.client, sid: "mcp-session-NOSUCHSESSION"}
		if code := status(nobody.do(http.MethodDelete, "", nil)); code != http.StatusNotFound {
			t.Fatalf("DELETE of no session: HTTP %d, want 404", code)
		}
		if n := p.openHTTPSessions(t); n != 2 {
			t.Fatalf("a DELETE of no session ended one: %d open, want 2", n)
		}

		if code := status(a.do(http.MethodDelete, "", nil)); code != http.StatusOK {
			t.Fatalf("DELETE: HTTP %d, want 200", code)
		}
		<-closed
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		if code, _ := a.post(list); code != http.StatusNotFound {
			t.Fatalf("a request of the deleted session: HTTP %d, want 404", code)
		}
		if code, msgs := b.post(list); code != http.StatusOK || len(msgs) != 1 || !strings.Contains(msgs[0].line, "db__echo") {
			t.Fatalf("the other session's tools/list: HTTP %d %+v", code, msgs)
		}
		if n := p.openHTTPSessions(t); n != 1 {
			t.Fatalf("%d HTTP host sessions open in the ledger after the DELETE, want 1", n)
		}
	})
}

// A 2025 host's answer is taken only for a request mcp-guard sent it and
// still waits for: an answer to nothing, a result or an error, gets 400,
// and an empty answer (a ping's) is accepted.
func TestWalk_HTTPAnswerToNoRequestRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, dbRules, [2]string{"db", confirmTools})
		h := startHTTPHost(t, p.Proxy).session(initBody)
		if code, _ := h.post(`{"jsonrpc":"2.0","id":77,"result":{"action":"accept","content":{"sure":true}}}`); code != http.StatusBadRequest {
			t.Fatalf("an answer to no request: HTTP %d, want 400", code)
		}
		if code, _ := h.post(`{"jsonrpc":"2.0","id":79,"error":{"code":-1,"message":"no"}}`); code != http.StatusBadRequest {
			t.Fatalf("an error answer to no request: HTTP %d, want 400", code)
		}
		if code, _ := h.post(`{"jsonrpc":"2.0","id":78,"result":{}}`); code != http.StatusAccepted {
			t.Fatalf("an empty answer: HTTP %d, want 202", code)
		}
	})
}

// A 2026-07-28 host's standard headers must say what its body says
// (SEP-2243): a tools/call whose Mcp-Name or Mcp-Method names something
// else than the body, or leaves it out, is refused (400, the header
// mismatch error) and reaches neither the ledger nor the upstream, so
// nothing that routes or checks by header reads another call than the
// one served. With headers that match, the same call is served.
func TestWalk_ModernHTTPHeadersMustSayWhatTheBodySays(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, dbRules, [2]string{"db", confirmTools})
		h := modernHTTPHost(t, p.Proxy)
		const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"db__echo","arguments":{"x":1},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		post := func(method, name string) (int, string) {
			t.Helper()
			hdr := map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": method, "Mcp-Name": name}
			resp := h.do(http.MethodPost, body, hdr)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		for _, c := range []struct{ what, method, name string }{
			{"Mcp-Name naming another tool", "tools/call", "db__confirm"},
			{"no Mcp-Name", "tools/call", ""},
			{"Mcp-Method naming another method", "tools/list", "db__echo"},
		} {
			if code, got := post(c.method, c.name); code != http.StatusBadRequest || !strings.Contains(got, "-32020") {
				t.Fatalf("%s: HTTP %d %s; want 400 and the header mismatch error", c.what, code, got)
			}
		}
		if n := len(p.received(t, "db", "tools/call")); n != 0 {
			t.Fatalf("a call with headers that do not match reached the upstream (%d)", n)
		}
		if rows := p.calls(t); len(rows) != 0 {
			t.Fatalf("a call with headers that do not match was recorded: %+v", rows)
		}
		if code, got := post("tools/call", "db__echo"); code != http.StatusOK || !strings.Contains(got, `"result"`) {
			t.Fatalf("the call with matching headers: HTTP %d %s", code, got)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 1 {
			t.Fatalf("the call with matching headers reached the upstream %d times, want 1", n)
		}
	})
}

// A server's log message reaches an HTTP host's session as the server's
// own bytes: its data's member order, its number as written,
// its text not HTML-escaped, whichever stream of the session carries it.
func TestWalk_HTTPLogMessageIsTheServersOwnBytes(t *testing.T) {
	walk(t, func(t *testing.T) {
		const note = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"db","data":{"z":"<b>&","a":1.50}}}`
		script := `{"tools":[{"name":"noisy","inputSchema":{"type":"object"}}],"calls":{"noisy":{"do":"notify","lines":[` + strconv.Quote(note) + `]}}}`
		p := newMemProxy(t, dbRules, [2]string{"db", script})
		h := startHTTPHost(t, p.Proxy).session(initBody)
		get := h.do(http.MethodGet, "", nil)
		defer get.Body.Close()
		logged := make(chan string, 4)
		go func() {
			sc := bufio.NewScanner(get.Body)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"notifications/message"`) {
					logged <- d
				}
			}
		}()
		_, msgs := h.post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"db__noisy","arguments":{}}}`)
		for _, m := range msgs {
			if m.Method == "notifications/message" {
				logged <- m.line
			}
		}
		select {
		case line := <-logged:
			if !strings.Contains(line, `"data":{"z":"<b>&","a":1.50}`) || !strings.Contains(line, `"logger":"db/db"`) {
				t.Fatalf("the host read the log message as %s; want the server's own data bytes under db/db", line)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the log message did not reach the HTTP host")
		}
	})
}
