//go:build linux || freebsd || openbsd || netbsd || dragonfly

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/sessionbus/sessionbustest"
)

// notifyTools: look is allowed, echo asks, and a tool whose name carries
// controls, a bidi override and markup is withheld from the host.
func notifyTools() string {
	return `{"tools":[
{"name":"look","inputSchema":{"type":"object"}},
{"name":"echo","inputSchema":{"type":"object"}},
{"name":"bad` + strings.Trim(hostileJSON(), `"`) + `<b>","inputSchema":{"type":"object"}}]}`
}

// notifyArgs are hostile arguments: none of their text may reach a
// notification.
func notifyArgs(n int) map[string]any {
	return map[string]any{"q": "ARGVALUE" + hostile, hostile + "ARGKEY": n}
}

// checkNoArgs fails t when a notification holds argument text or a raw
// control character.
func checkNoArgs(t *testing.T, n sessionbustest.Note) {
	t.Helper()
	for _, s := range []string{n.Summary, n.Body} {
		for _, bad := range []string{"ARGVALUE", "ARGKEY", "RED", "pwned", "evil"} {
			if strings.Contains(s, bad) {
				t.Errorf("the notification holds argument text %q: %q", bad, s)
			}
		}
		checkNoRawControl(t, "the notification", s)
	}
}

// One Notify per call that waits for the operator, naming the server, the
// tool and the approval, with none of the arguments; an allowed call and a
// refused one (a hostile name, withheld) send none.
func TestNotify_OneNotifyPerWaitingCall(t *testing.T) {
	t.Parallel()
	bus := sessionbustest.StartBus(t)
	svc := sessionbustest.NewService(t, bus, "body", "body-markup")
	e := newEnv(t)
	e.extra = append(e.extra, "DBUS_SESSION_BUS_ADDRESS="+bus) // [notify] desktop unset: on, since a bus is there
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", notifyTools()), askRules)
	h := e.connect(cfg, "")

	if r, err := h.call(t, "db__look", notifyArgs(0)); err != nil || r.IsError {
		t.Fatalf("allowed call: %v %v", err, r)
	}
	if r, err := h.call(t, "db__bad"+hostile+"<b>", notifyArgs(0)); err == nil && !r.IsError {
		t.Fatalf("the hostile-named tool was called: %v", r)
	}

	done := h.callAsync("db__echo", notifyArgs(1), 30*time.Second)
	id1, shown := e.pendingApproval(cfg)
	n1 := svc.Wait(t, 1)[0]
	if n1.AppName != "mcp-guard" || !strings.Contains(n1.Summary, "approval "+id1) ||
		!strings.Contains(n1.Body, "A call to db/echo waits") || !strings.Contains(n1.Body, "mcp-guard approvals show "+id1) {
		t.Fatalf("notification %+v for approval %s", n1, id1)
	}
	t.Logf("notification: %q / %q", n1.Summary, n1.Body)
	checkNoArgs(t, n1)
	if out, code := e.mcpGuard("approve", id1, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	if r := <-done; r.err != nil || r.res.IsError {
		t.Fatalf("approved call: %v %v", r.err, r.res)
	}

	done = h.callAsync("db__echo", notifyArgs(2), 30*time.Second)
	id2, shown := e.pendingApproval(cfg)
	notes := svc.Wait(t, 2)
	if len(notes) != 2 || id2 == id1 || !strings.Contains(notes[1].Summary, "approval "+id2) {
		t.Fatalf("want one notification per waiting call (approvals %s, %s), got %+v", id1, id2, notes)
	}
	checkNoArgs(t, notes[1])
	if out, code := e.mcpGuard("deny", id2, "--config", cfg, "--shown", shown, "--reason", "no"); code != 0 {
		t.Fatalf("deny (exit %d): %s", code, out)
	}
	if r := <-done; r.err == nil && !r.res.IsError {
		t.Fatalf("denied call ran: %v", r.res)
	}
	h.Close()
	if n := len(svc.Notes()); n != 2 {
		t.Fatalf("%d notifications for 2 waiting calls: %+v", n, svc.Notes())
	}
}

// [notify] desktop = false: a waiting call sends nothing, though a bus is
// there. A serve started after it, with the default, sends the one
// notification the service receives: the first serve's would have come
// before it.
func TestNotify_DisabledSendsNothing(t *testing.T) {
	t.Parallel()
	bus := sessionbustest.StartBus(t)
	svc := sessionbustest.NewService(t, bus, "body")
	e := newEnv(t)
	e.extra = append(e.extra, "DBUS_SESSION_BUS_ADDRESS="+bus)
	off := e.config("[notify]\ndesktop = false\n\n[limits]\napproval_wait = \"20s\"\n", e.fake("db", notifyTools()), askRules)
	h := e.connect(off, "")
	done := h.callAsync("db__echo", notifyArgs(1), 30*time.Second)
	id1, shown := e.pendingApproval(off)
	if out, code := e.mcpGuard("approve", id1, "--config", off, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	if r := <-done; r.err != nil || r.res.IsError {
		t.Fatalf("approved call: %v %v", r.err, r.res)
	}
	h.Close() // the process has ended: anything it sent is on the bus

	on := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", notifyTools()), askRules)
	h = e.connect(on, "")
	done = h.callAsync("db__echo", notifyArgs(2), 30*time.Second)
	id2, shown := e.pendingApproval(on)
	notes := svc.Wait(t, 1)
	if len(notes) != 1 || !strings.Contains(notes[0].Summary, "approval "+id2) {
		t.Fatalf("desktop = false sent a notification (approval %s off, %s on): %+v", id1, id2, notes)
	}
	e.mcpGuard("deny", id2, "--config", on, "--shown", shown)
	<-done
}

// No bus to reach (the address names no socket, or none is known and
// desktop = true): the call still waits and is approved as ever, and the
// failure is logged once, not per call.
func TestNotify_BusAbsentCallStillWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.extra = append(e.extra, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(e.dir, "nobus"))
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", notifyTools()), askRules)
	h := e.connect(cfg, "")
	for i := 1; i <= 2; i++ {
		done := h.callAsync("db__echo", notifyArgs(i), 30*time.Second)
		id, shown := e.pendingApproval(cfg)
		if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
			t.Fatalf("approve (exit %d): %s", code, out)
		}
		if r := <-done; r.err != nil || r.res.IsError {
			t.Fatalf("approved call %d: %v %v", i, r.err, r.res)
		}
	}
	h.Close() // serve lets its queued notifications be tried, then says how many failed
	log := h.stderr.String()
	if c := strings.Count(log, "desktop notification not sent"); c != 1 || !strings.Contains(log, "not_sent=2") {
		t.Fatalf("want the failure logged once and 2 counted:\n%s", log)
	}
	if n := len(e.calls("db")); n != 2 {
		t.Fatalf("upstream got %d calls, want 2", n)
	}

	e.extra = nil // no session bus known at all
	cfg = e.config("[notify]\ndesktop = true\n\n[limits]\napproval_wait = \"20s\"\n", e.fake("db", notifyTools()), askRules)
	h = e.connect(cfg, "")
	done := h.callAsync("db__echo", notifyArgs(3), 30*time.Second)
	id, shown := e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	if r := <-done; r.err != nil || r.res.IsError {
		t.Fatalf("approved call: %v %v", r.err, r.res)
	}
	if log := h.stderr.String(); !strings.Contains(log, "notify.desktop is true, but no desktop notification can be sent") {
		t.Fatalf("serve does not say why no notification is sent:\n%s", log)
	}
}
