package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
)

// A server in this process (Spec.Dial) is spoken to as a stdio child: it
// is initialized, listed and called over the pipe, and when it goes away
// mid-call the caller learns the connection ended, as with a child that
// exits; Close ends its connection.
func TestPipe_ServerInThisProcess(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}}],
"calls":{"echo":{"do":"echo"},"boom":{"do":"crash"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	served := make(chan int, 1)
	spec := Spec{Name: "inproc", Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		ours, theirs := net.Pipe()
		go func() {
			served <- fakeupstream.Serve(context.WithoutCancel(ctx), []string{"--script", script}, theirs, io.Discard)
		}()
		return ours, nil
	}}
	ctx := context.Background()
	u, err := Start(ctx, spec, Options{Limits: config.DefaultLimits(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if got := u.Started().Transport; got != "pipe" {
		t.Errorf("transport %q, want pipe", got)
	}
	res, err := u.CallTool(ctx, "echo", []byte(`{"a":1}`), nil, nil)
	if err != nil || !strings.Contains(string(res), `"arguments":{"a":1}`) {
		t.Fatalf("echo: %s %v", res, err)
	}
	_, err = u.CallTool(ctx, "boom", []byte(`{}`), nil, nil)
	var ended *EndedError
	if !errors.As(err, &ended) || !strings.Contains(ended.Host, `upstream "inproc" closed its connection`) {
		t.Fatalf("call to a server that went away: %v; want it ended, in words", err)
	}
	if code := <-served; code != 3 {
		t.Errorf("the fake ended with %d, want 3 (its crash)", code)
	}
	// A Dial that gives neither a connection nor an error is refused, in words.
	_, err = Start(ctx, Spec{Name: "nothing", Dial: func(context.Context) (io.ReadWriteCloser, error) { return nil, nil }},
		Options{Limits: config.DefaultLimits(), Version: "test"})
	if err == nil || !strings.Contains(err.Error(), `server "nothing": dial: no connection`) {
		t.Fatalf("a Dial with no connection: %v", err)
	}
}
