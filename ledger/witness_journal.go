package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"strconv"
	"strings"
)

// journalWitness speaks systemd-journald's native protocol: one datagram
// of KEY=VALUE lines to its socket. journald adds the sender's uid, pid
// and executable itself (_UID, _PID, _EXE), which no sender can forge.
type journalWitness struct{ sockWitness }

// journalIdentifier is SYSLOG_IDENTIFIER on every head mcp-guard sends;
// verify --witness journal reads the heads back by it.
const journalIdentifier = "mcp-guard"

func (w *journalWitness) Commit(ctx context.Context, h Head) error {
	return w.send(ctx, journalDatagram(h))
}

// journalDatagram encodes h's fields in the native protocol. A value
// holding a newline (a path may) uses the binary form: the name, a
// newline, its length as a little-endian uint64, the bytes, a newline.
func journalDatagram(h Head) []byte {
	var b bytes.Buffer
	field := func(k, v string) {
		if !strings.Contains(v, "\n") {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
			b.WriteByte('\n')
			return
		}
		b.WriteString(k)
		b.WriteByte('\n')
		_ = binary.Write(&b, binary.LittleEndian, uint64(len(v)))
		b.WriteString(v)
		b.WriteByte('\n')
	}
	field("MESSAGE", headMessage(h))
	field("PRIORITY", "5") // notice
	field("SYSLOG_IDENTIFIER", journalIdentifier)
	field("MCP_GUARD_LEDGER", h.Ledger)
	field("MCP_GUARD_PATH", h.Path)
	field("MCP_GUARD_SEQ", strconv.FormatInt(h.Seq, 10))
	field("MCP_GUARD_HASH", h.Hash)
	field("MCP_GUARD_WHY", h.Why)
	field("MCP_GUARD_AT", h.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	return b.Bytes()
}
