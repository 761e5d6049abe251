package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
)

// A legacy SSE server whose endpoint event names another origin is refused:
// credentials are sent only to the configured address, and nothing is
// POSTed to the other one.
func TestHTTP_SSEEndpointOtherOriginRefused(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the other origin got %s %s with Authorization %q", r.Method, r.URL, r.Header.Get("Authorization"))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed) // not streamable: fall back
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	spec := Spec{Name: "legacy", URL: srv.URL + "/sse", Header: func() (http.Header, error) {
		return http.Header{"Authorization": {"Bearer secret-token"}}, nil
	}}
	_, err := Start(context.Background(), spec, Options{Limits: testLimits(5*time.Second, 0), LogDir: t.TempDir(), Version: "test", Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "names another origin") {
		t.Fatalf("start: %v; want the other origin refused", err)
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("the error shows the token: %v", err)
	}
}

func TestReadEvents(t *testing.T) {
	in := ": keep-alive\r\nevent: endpoint\r\ndata: /m?s=1\r\n\r\ndata: {\"a\":\ndata: 1}\n\nid: 7\ndata:x\n\nevent: cut\ndata: never dispatched"
	var got []string
	if err := readEvents(strings.NewReader(in), 1024, nil, func(typ string, data []byte) bool {
		got = append(got, typ+"|"+string(data))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"endpoint|/m?s=1", "|{\"a\":\n1}", "|x"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if err := readEvents(strings.NewReader("data: "+strings.Repeat("x", 2000)+"\n\n"), 1024, nil, func(string, []byte) bool { return true }); err == nil {
		t.Fatalf("an event over the cap was read")
	}
}

// Event IDs and the retry field are followed as the SSE standard says: a
// priming event (an ID, no data) sets the position and is not dispatched;
// an ID with a NUL, a retry that is not all digits, and an ID of an event
// the stream cut short are ignored.
func TestReadEvents_Position(t *testing.T) {
	tests := []struct {
		in, wantID string
		retry      time.Duration
		events     int
	}{
		{in: "id: 1\nretry: 200\ndata:\n\n", wantID: "1", retry: 200 * time.Millisecond},
		{in: "id: 1\ndata: {}\n\nid: 2\ndata: {}\n\n", wantID: "2", events: 2},
		{in: "id: 1\ndata: {}\n\nid: 2\ndata: {}", wantID: "1", events: 1},
		{in: "id: a\x00b\ndata: {}\n\n", wantID: "", events: 1},
		{in: "retry: 2s\nretry: +5\nretry: -1\nid: 3\n\n", wantID: "3"},
		{in: "id: 9\ndata: {}\n\nid\ndata: {}\n\n", wantID: "", events: 2},
	}
	for _, tt := range tests {
		var pos streamPos
		n := 0
		if err := readEvents(strings.NewReader(tt.in), 1024, &pos, func(string, []byte) bool { n++; return true }); err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if pos.lastID != tt.wantID || pos.retry != tt.retry || n != tt.events {
			t.Errorf("%q: id %q retry %s, %d events; want %q, %s, %d", tt.in, pos.lastID, pos.retry, n, tt.wantID, tt.retry, tt.events)
		}
	}
}

// A server may close an answer stream before the answer once it has given
// an event ID (2025-11-25): the call goes on over GET with Last-Event-ID
// after the server's retry time, and gets the answer. Without an event ID
// the call fails, saying the stream ended.
func TestHTTP_AnswerStreamResumedFromLastEventID(t *testing.T) {
	for _, primed := range []bool{true, false} {
		t.Run(fmt.Sprintf("primed=%v", primed), func(t *testing.T) {
			var mu sync.Mutex
			var resumedWith []string
			answer := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Mcp-Session-Id", "s1")
				switch {
				case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "":
					http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
				case r.Method == http.MethodGet:
					mu.Lock()
					resumedWith = append(resumedWith, r.Header.Get("Last-Event-ID"))
					mu.Unlock()
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "id: 2\ndata: %s\n\n", <-answer)
				case r.Method == http.MethodPost:
					body, _ := io.ReadAll(r.Body)
					var req struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					json.Unmarshal(body, &req)
					switch req.Method {
					case "initialize":
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"poll","version":"1"}}}`, req.ID)
					case "tools/call":
						w.Header().Set("Content-Type", "text/event-stream")
						if primed {
							fmt.Fprint(w, "id: 1\nretry: 100\ndata:\n\n")
						}
						answer <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}`, req.ID)
						// closed before the answer
					default:
						w.WriteHeader(http.StatusAccepted)
					}
				}
			}))
			defer srv.Close()
			c, err := Start(t.Context(), Spec{Name: "poll", URL: srv.URL}, Options{Limits: testLimits(5*time.Second, 10*time.Second), LogDir: t.TempDir(), Version: "test", Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.CallTool(t.Context(), "slow", json.RawMessage(`{}`), nil, nil)
			mu.Lock()
			defer mu.Unlock()
			if !primed {
				if err == nil || !strings.Contains(err.Error(), "ended before the answer") || len(resumedWith) != 0 {
					t.Fatalf("call: %s, %v, resumed with %q; want it failed, saying the stream ended, and no resumption", res, err, resumedWith)
				}
				return
			}
			if err != nil || !strings.Contains(string(res), `"done"`) {
				t.Fatalf("call: %s, %v; want the answer from the resumed stream", res, err)
			}
			if len(resumedWith) != 1 || resumedWith[0] != "1" {
				t.Fatalf("resumed with Last-Event-ID %q; want once, from 1", resumedWith)
			}
		})
	}
}

// testLimits are the default limits with start and (when set) call
// timeouts of the test's own.
func testLimits(start, call time.Duration) config.Limits {
	l := config.DefaultLimits()
	l.StartTimeout = start
	if call > 0 {
		l.CallTimeout = call
	}
	return l
}
