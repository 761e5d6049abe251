// Package sessionbustest owns what tests of desktop services run on: a
// private D-Bus session bus (a dbus-daemon the test starts and stops), a
// notification service on it that records each Notify it receives, as a
// desktop's would show it, and a real Secret Service on it
// (gnome-keyring-daemon), for the keyring's tests.
package sessionbustest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// busConfig is a session bus that anyone on it may own any name on and
// send anything to: the test's own.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// StartBus starts a private dbus-daemon for t and returns its address;
// the daemon is stopped when t ends. t fails when dbus-daemon is missing
// (.ci/run installs it).
func StartBus(t testing.TB) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatalf("dbus-daemon is not installed (apt-get install dbus): %v", err)
	}
	// A unix socket path is at most 107 bytes: a short directory, not t.TempDir.
	dir, err := os.MkdirTemp("", "notifybus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(cfg, []byte(strings.Replace(busConfig, "%s", filepath.Join(dir, "bus"), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--print-address", "--nofork", "--nopidfile", "--config-file="+cfg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("dbus-daemon printed no address: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return strings.TrimSpace(addr)
}

// Note is one Notify call the service received.
type Note struct {
	AppName string
	Icon    string
	Summary string
	Body    string
	Hints   map[string]dbus.Variant
	Timeout int32
}

// Service is a fake org.freedesktop.Notifications on a bus: it records
// each Notify and answers with a new ID.
type Service struct {
	conn *dbus.Conn
	caps []string

	mu      sync.Mutex
	notes   []Note
	entered int           // Notify calls begun, answered or not
	held    chan struct{} // while not nil, Notify waits for it to close
	arrived chan struct{} // receives a value per Notify begun or answered
}

// NewService owns org.freedesktop.Notifications on the bus at addr, for t,
// announcing caps from GetCapabilities.
func NewService(t testing.TB, addr string, caps ...string) *Service {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the test bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &Service{conn: conn, caps: caps, arrived: make(chan struct{}, 1024)}
	if err := conn.Export(serviceObject{s}, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: reply %v, %v", reply, err)
	}
	return s
}

// Notes returns the Notify calls received so far, in order.
func (s *Service) Notes() []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Note(nil), s.notes...)
}

// Hold makes each Notify from now on wait, unanswered, until Release.
func (s *Service) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = make(chan struct{})
	}
}

// Release answers the Notify calls Hold kept waiting, and those to come.
func (s *Service) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
}

// WaitEntered waits until n Notify calls have begun, answered or held.
func (s *Service) WaitEntered(t testing.TB, n int) {
	t.Helper()
	s.waitFor(t, func() bool { return s.entered >= n }, fmt.Sprintf("%d Notify calls begun", n))
}

func (s *Service) waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		ok := cond()
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; received: %+v", what, s.Notes())
		}
	}
}

// Wait waits until n Notify calls have arrived in all and returns them;
// t fails after 20s.
func (s *Service) Wait(t testing.TB, n int) []Note {
	t.Helper()
	s.waitFor(t, func() bool { return len(s.notes) >= n }, fmt.Sprintf("%d notifications", n))
	return s.Notes()
}

// serviceObject is the exported object: its exported methods are the
// interface's methods on the bus.
type serviceObject struct{ s *Service }

func (o serviceObject) Notify(appName string, replacesID uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	o.s.mu.Lock()
	o.s.entered++
	held := o.s.held
	o.s.mu.Unlock()
	o.s.signal()
	if held != nil {
		<-held
	}
	o.s.mu.Lock()
	o.s.notes = append(o.s.notes, Note{AppName: appName, Icon: icon, Summary: summary, Body: body, Hints: hints, Timeout: timeout})
	id := uint32(len(o.s.notes))
	o.s.mu.Unlock()
	o.s.signal()
	return id, nil
}

func (s *Service) signal() {
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

func (o serviceObject) GetCapabilities() ([]string, *dbus.Error) { return o.s.caps, nil }

func (o serviceObject) GetServerInformation() (name, vendor, version, specVersion string, err *dbus.Error) {
	return "sessionbustest", "mcp-guard", "1", "1.2", nil
}

func (o serviceObject) CloseNotification(id uint32) *dbus.Error { return nil }
