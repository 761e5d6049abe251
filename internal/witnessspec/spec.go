// Package witnessspec owns the names of chain-head witnesses as the operator
// writes them in [ledger] witness: their grammar, the socket paths each
// platform uses, and the default chosen when none is configured. The config
// checks them with it; the ledger opens the sinks they name.
package witnessspec

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Kinds of witness.
const (
	Journal = "journal" // the systemd journal's native protocol
	Syslog  = "syslog"  // a syslog socket (RFC 3164 datagrams)
	File    = "file"    // an append-only JSONL file
	OTLP    = "otlp"    // the [export] otlp collector (write-only: verify cannot read it back)
)

// JournalSocket is where systemd-journald listens for native messages.
const JournalSocket = "/run/systemd/journal/socket"

// SyslogSocket is the platform's local syslog socket.
func SyslogSocket() string {
	if runtime.GOOS == "darwin" {
		return "/var/run/syslog"
	}
	return "/dev/log"
}

// Spec is one parsed witness: its kind and the socket or file it writes to.
type Spec struct {
	Kind string
	Path string
}

// String is the spec as the operator writes it.
func (s Spec) String() string {
	switch {
	case s.Kind == File:
		return File + ":" + s.Path
	case s.Kind == OTLP:
		return OTLP
	case s.Kind == Journal && s.Path == JournalSocket, s.Kind == Syslog && s.Path == SyslogSocket():
		return s.Kind
	}
	return s.Kind + ":" + s.Path
}

// Parse reads one witness as written in [ledger] witness: "journal" or
// "journal:SOCKET", "syslog" or "syslog:SOCKET", "file:PATH", "otlp". The path
// is returned as written (the config expands ~ and variables).
func Parse(s string) (Spec, error) {
	kind, path, hasPath := strings.Cut(s, ":")
	switch kind {
	case Journal, Syslog:
		if !hasPath {
			if kind == Journal {
				return Spec{Kind: Journal, Path: JournalSocket}, nil
			}
			return Spec{Kind: Syslog, Path: SyslogSocket()}, nil
		}
		if path == "" {
			return Spec{}, fmt.Errorf("%q: the socket path after %q is empty; write %q for the system's socket", s, kind+":", kind)
		}
		return Spec{Kind: kind, Path: path}, nil
	case File:
		if path == "" {
			return Spec{}, fmt.Errorf("%q: want file:PATH, the JSONL file heads are appended to", s)
		}
		return Spec{Kind: File, Path: path}, nil
	case OTLP:
		if hasPath {
			return Spec{}, fmt.Errorf("%q: write \"otlp\": heads go to the collector named in [export] otlp", s)
		}
		return Spec{Kind: OTLP}, nil
	}
	return Spec{}, fmt.Errorf("%q: unknown witness; want \"journal\", \"syslog\", \"file:PATH\", \"otlp\" (or journal:SOCKET, syslog:SOCKET)", s)
}

// Default is the witness used when [ledger] witness is not set: the journal
// when its socket exists, else the local syslog socket when it exists, else
// none (serve then says that nothing witnesses the ledger).
func Default() []Spec {
	if isSocket(JournalSocket) {
		return []Spec{{Kind: Journal, Path: JournalSocket}}
	}
	if p := SyslogSocket(); isSocket(p) {
		return []Spec{{Kind: Syslog, Path: p}}
	}
	return nil
}

func isSocket(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
