//go:build linux || freebsd || openbsd || netbsd || dragonfly

package notify

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/mcp-guard/mcp-guard/sessionbus"
)

// The freedesktop Desktop Notifications interface
// (https://specifications.freedesktop.org/notification-spec/).
const (
	notifyName  = "org.freedesktop.Notifications"
	notifyPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	notifyIface = "org.freedesktop.Notifications"
)

// dbusSender calls org.freedesktop.Notifications.Notify on the session bus
// at addr. It connects at its first send, and again after the connection
// is lost (the desktop session restarted).
type dbusSender struct {
	addr   string
	conn   *dbus.Conn
	markup bool // the server announced "body-markup": the body is escaped
}

func (s *dbusSender) String() string { return "D-Bus session bus (org.freedesktop.Notifications)" }

func (s *dbusSender) send(ctx context.Context, n note) error {
	if s.conn == nil || !s.conn.Connected() {
		s.close()
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	body := n.Body
	if s.markup {
		body = escapeMarkup(body)
	}
	hints := map[string]dbus.Variant{
		"urgency":  dbus.MakeVariant(byte(1)), // normal
		"category": dbus.MakeVariant("im"),
	}
	var id uint32
	obj := s.conn.Object(notifyName, notifyPath)
	err := obj.CallWithContext(ctx, notifyIface+".Notify", 0,
		"mcp-guard", uint32(0), "dialog-warning", n.Summary, body, []string{}, hints, int32(-1)).Store(&id)
	if err != nil {
		return fmt.Errorf("notify: org.freedesktop.Notifications.Notify: %w", err)
	}
	return nil
}

// connect dials the bus, authenticates and says Hello within ctx, then
// asks the notification server whether it reads markup in the body.
func (s *dbusSender) connect(ctx context.Context) error {
	conn, err := sessionbus.Dial(ctx, s.addr)
	if err != nil {
		return fmt.Errorf("notify: session bus: %w", err)
	}
	var caps []string
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if conn.Object(notifyName, notifyPath).CallWithContext(cctx, notifyIface+".GetCapabilities", 0).Store(&caps) == nil {
		s.markup = slices.Contains(caps, "body-markup")
	} else {
		s.markup = true // unknown: escaping shows the text, not reading it as markup
	}
	s.conn = conn
	return nil
}

func (s *dbusSender) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}
