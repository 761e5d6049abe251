package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	_, err := Start(context.Background(), spec, Options{Limits: Limits{StartTimeout: 5 * time.Second}, LogDir: t.TempDir(), Version: "test", Log: slog.New(slog.DiscardHandler)})
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
	if err := readEvents(strings.NewReader(in), 1024, func(typ string, data []byte) bool {
		got = append(got, typ+"|"+string(data))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"endpoint|/m?s=1", "|{\"a\":\n1}", "|x"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if err := readEvents(strings.NewReader("data: "+strings.Repeat("x", 2000)+"\n\n"), 1024, func(string, []byte) bool { return true }); err == nil {
		t.Fatalf("an event over the cap was read")
	}
}
