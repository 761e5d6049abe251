package ledger

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
)

// A Witness keeps chain heads outside the ledger file, where the file's
// owner cannot rewrite them: the system journal, syslog (both root's), or
// an append-only file the operator keeps elsewhere.
type Witness interface {
	// Name is the witness as the operator wrote it.
	Name() string
	// Probe reports whether the witness can be reached now.
	Probe(ctx context.Context) error
	// Commit hands h to the witness. It returns once the witness's
	// receiver holds it (a datagram in root's socket, a line appended).
	Commit(ctx context.Context, h Head) error
	Close() error
}

// OpenWitness returns the witness spec names. Nothing is connected yet:
// Probe and Commit connect (and reconnect after a failure).
func OpenWitness(spec witnessspec.Spec) (Witness, error) {
	switch spec.Kind {
	case witnessspec.Journal:
		return &journalWitness{sockWitness{name: spec.String(), path: spec.Path}}, nil
	case witnessspec.Syslog:
		return &syslogWitness{sockWitness: sockWitness{name: spec.String(), path: spec.Path}}, nil
	case witnessspec.File:
		return &fileWitness{name: spec.String(), path: spec.Path}, nil
	case witnessspec.OTLP:
		return nil, fmt.Errorf("ledger: witness %q: opened with the [export] otlp exporter, not here", spec.String())
	}
	return nil, fmt.Errorf("ledger: witness %q: unknown kind %q", spec.String(), spec.Kind)
}

// witnessTimeout bounds one commit to one witness when the caller's
// context has no deadline.
const witnessTimeout = 2 * time.Second

// headMessage is the human-readable line every witness carries (the
// journal's MESSAGE, the syslog message): everything verify needs, in an
// order parseHeadMessage reads back.
func headMessage(h Head) string {
	return fmt.Sprintf("ledger head seq=%d hash=%s why=%s ledger=%s path=%s",
		h.Seq, h.Hash, h.Why, h.Ledger, strconv.Quote(h.Path))
}

var headMessageRE = regexp.MustCompile(`ledger head seq=([0-9]+) hash=([0-9a-f]{64}) why=([a-z-]+) ledger=([0-9a-f]{64}) path=("(?:[^"\\]|\\.)*")`)

// parseHeadMessage reads a headMessage back from s (which may hold more
// around it, such as a syslog prefix).
func parseHeadMessage(s string) (Head, bool) {
	m := headMessageRE.FindStringSubmatch(s)
	if m == nil {
		return Head{}, false
	}
	seq, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return Head{}, false
	}
	path, err := strconv.Unquote(m[5])
	if err != nil {
		return Head{}, false
	}
	return Head{Seq: seq, Hash: m[2], Why: m[3], Ledger: m[4], Path: path}, true
}

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, witnessTimeout)
}
