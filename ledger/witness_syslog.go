package ledger

import (
	"context"
	"fmt"
	"os"
)

// syslogWitness sends RFC 3164 datagrams to the local syslog socket
// (/dev/log), the format every local syslog daemon and journald's
// syslog socket read: "<PRI>Mmm dd hh:mm:ss mcp-guard[PID]: MESSAGE".
type syslogWitness struct {
	sockWitness
}

// syslogPriority is facility user (1), severity notice (5).
const syslogPriority = 1*8 + 5

func (w *syslogWitness) Commit(ctx context.Context, h Head) error {
	return w.send(ctx, syslogLine(h, os.Getpid()))
}

func syslogLine(h Head, pid int) []byte {
	return fmt.Appendf(nil, "<%d>%s %s[%d]: %s", syslogPriority, h.At.Local().Format("Jan _2 15:04:05"), journalIdentifier, pid, headMessage(h))
}
