//go:build linux || freebsd || openbsd || netbsd || dragonfly

package notify

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/sessionbus/sessionbustest"
)

// hostileName is a name an upstream could choose: a colour, a bell, a C1
// control, a bidi override, a zero-width space, a tag character and markup.
const hostileName = "x\x1b[31mRED\x07\u009b\u202eevil\u200b\U000E0041<b>&"

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// logBuffer is an operator log the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func checkClean(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		if r != '\n' && safetext.Suspicious(r) {
			t.Errorf("%s has a raw %U at byte %d: %q", what, r, i, s)
		}
	}
}

// A Notify names the server, the tool and the approval, escaped; markup
// is escaped for a server that reads it.
func TestNotifier_SendsOverTheSessionBus(t *testing.T) {
	addr := sessionbustest.StartBus(t)
	svc := sessionbustest.NewService(t, addr, "body", "body-markup")
	if how, ok := Available(envOf("DBUS_SESSION_BUS_ADDRESS", addr)); !ok {
		t.Fatalf("Available with a session bus: %s", how)
	}
	n, err := New(envOf("DBUS_SESSION_BUS_ADDRESS", addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Waiting(Waiting{Kind: "tool", Server: "srv" + hostileName, Name: "tool" + hostileName, Approval: 42})
	notes := svc.Wait(t, 1)
	got := notes[0]
	if got.AppName != "mcp-guard" || !strings.Contains(got.Summary, "approval 42") {
		t.Fatalf("notification %+v", got)
	}
	for _, want := range []string{"srv", "tool", `\u{202E}evil`, `\u{001B}[31m`, "&lt;b&gt;&amp;", "mcp-guard approvals show 42"} {
		if !strings.Contains(got.Body, want) {
			t.Errorf("body lacks %q: %q", want, got.Body)
		}
	}
	if strings.Contains(got.Body, "<b>") {
		t.Errorf("markup reaches the notification server raw: %q", got.Body)
	}
	checkClean(t, "summary", got.Summary)
	checkClean(t, "body", got.Body)
	n.Close() // the sender has had its answer
	if s := n.Stats(); s.Sent != 1 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A server without body-markup gets the text as it is (escaped only).
func TestNotifier_PlainTextServer(t *testing.T) {
	addr := sessionbustest.StartBus(t)
	svc := sessionbustest.NewService(t, addr, "body")
	n, err := New(envOf("DBUS_SESSION_BUS_ADDRESS", addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Waiting(Waiting{Kind: "prompt", Server: "s", Name: "a<b>", Approval: 7})
	got := svc.Wait(t, 1)[0]
	if !strings.Contains(got.Body, "prompt s/a<b>") {
		t.Fatalf("body %q", got.Body)
	}
}

// Each kind of request is named; a resource read's URI (its argument) is
// not.
func TestText_EachKind(t *testing.T) {
	for w, want := range map[Waiting]string{
		{Kind: "tool", Server: "fs", Name: "write", Approval: 1}:                      "A call to fs/write",
		{Kind: "prompt", Server: "fs", Name: "p", Approval: 1}:                        "A get of prompt fs/p",
		{Kind: "resource", Server: "fs", Name: "file:///secret/path", Approval: 1}:    "A read of a resource of fs",
		{Kind: "sampling", Server: "fs", Name: "sampling/createMessage", Approval: 1}: "A sampling request from fs",
		{Kind: "elicitation", Server: "fs", Approval: 1}:                              "An elicitation request from fs",
		{Kind: "roots", Server: "fs", Approval: 1}:                                    "A roots request from fs",
	} {
		n := text(w)
		if !strings.HasPrefix(n.Body, want) || strings.Contains(n.Body, "secret") {
			t.Errorf("text(%+v) = %q, want it to start %q", w, n.Body, want)
		}
	}
	long := text(Waiting{Kind: "tool", Server: "s", Name: strings.Repeat("n", 5000), Approval: 3})
	if len(long.Body) > 300 {
		t.Errorf("a long name is not bounded: %d bytes", len(long.Body))
	}
}

// No bus to reach: the failure is logged once, however many requests
// wait, and Waiting never fails.
func TestNotifier_BusAbsentLoggedOnce(t *testing.T) {
	var log logBuffer
	n, err := New(envOf("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "nobus")), log.logger())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i := range 3 {
		n.Waiting(Waiting{Kind: "tool", Server: "s", Name: "t", Approval: int64(i + 1)})
	}
	n.Close() // lets the queued notes be tried
	if s := n.Stats(); s.Failed != 3 || s.Sent != 0 {
		t.Fatalf("stats %+v, want 3 failed", s)
	}
	if c := strings.Count(log.String(), "desktop notification not sent"); c != 1 {
		t.Fatalf("the failure is logged %d times, want once:\n%s", c, log.String())
	}
	n.Waiting(Waiting{Kind: "tool", Server: "s", Name: "t", Approval: 9}) // after Close: nothing, no panic
}

// A notification server that does not answer fills the queue: further
// notes are dropped at once (counted, logged once), never waited for.
func TestNotifier_FullQueueDrops(t *testing.T) {
	addr := sessionbustest.StartBus(t)
	svc := sessionbustest.NewService(t, addr, "body")
	svc.Hold()
	t.Cleanup(svc.Release)
	var log logBuffer
	n, err := New(envOf("DBUS_SESSION_BUS_ADDRESS", addr), log.logger())
	if err != nil {
		t.Fatal(err)
	}
	n.Waiting(Waiting{Kind: "tool", Server: "s", Name: "t", Approval: 1})
	svc.WaitEntered(t, 1) // the sender holds the first, unanswered
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		for i := range queueLen + 3 {
			n.Waiting(Waiting{Kind: "tool", Server: "s", Name: "t", Approval: int64(i + 2)})
		}
	}()
	select {
	case <-queued:
	case <-time.After(20 * time.Second):
		t.Fatal("Waiting blocked on a full queue")
	}
	if s := n.Stats(); s.Dropped != 3 {
		t.Fatalf("stats %+v, want 3 dropped", s)
	}
	if c := strings.Count(log.String(), "desktop notification dropped"); c != 1 {
		t.Fatalf("drops logged %d times, want once:\n%s", c, log.String())
	}
	svc.Release()
	svc.Wait(t, 1+queueLen)
	n.Close()
}

// The session bus is $DBUS_SESSION_BUS_ADDRESS, else a socket at
// $XDG_RUNTIME_DIR/bus; nothing else is taken for one.
func TestSessionBus(t *testing.T) {
	dir, err := os.MkdirTemp("", "xdg-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if got := sessionBus(envOf("XDG_RUNTIME_DIR", dir)); got != "" {
		t.Fatalf("no socket: %q", got)
	}
	os.WriteFile(filepath.Join(dir, "bus"), nil, 0o600)
	if got := sessionBus(envOf("XDG_RUNTIME_DIR", dir)); got != "" {
		t.Fatalf("a plain file taken for the bus: %q", got)
	}
	os.Remove(filepath.Join(dir, "bus"))
	ln, err := net.Listen("unix", filepath.Join(dir, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got, want := sessionBus(envOf("XDG_RUNTIME_DIR", dir)), "unix:path="+filepath.Join(dir, "bus"); got != want {
		t.Fatalf("sessionBus = %q, want %q", got, want)
	}
	if got := sessionBus(envOf("XDG_RUNTIME_DIR", dir, "DBUS_SESSION_BUS_ADDRESS", "unix:path=/x")); got != "unix:path=/x" {
		t.Fatalf("DBUS_SESSION_BUS_ADDRESS not preferred: %q", got)
	}
	if _, ok := Available(envOf()); ok {
		t.Fatal("Available without a bus")
	}
	if _, err := New(envOf(), nil); err == nil {
		t.Fatal("New without a bus")
	}
}
