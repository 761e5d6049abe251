package ledger

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// decoder converts untyped column values, collecting one message per bad
// column instead of failing.
type decoder struct{ errs []string }

func (d *decoder) fail(col, format string, a ...any) {
	d.errs = append(d.errs, col+": "+fmt.Sprintf(format, a...))
}

func (d *decoder) err() string { return strings.Join(d.errs, "; ") }

func (d *decoder) text(col string, v any, required bool) string {
	switch x := v.(type) {
	case nil:
		if required {
			d.fail(col, "NULL")
		}
		return ""
	case string:
		if !utf8.ValidString(x) {
			d.fail(col, "invalid UTF-8")
			return strings.ToValidUTF8(x, "\uFFFD")
		}
		return x
	case []byte:
		d.fail(col, "a blob where text was expected")
		return strings.ToValidUTF8(string(x), "\uFFFD")
	default:
		d.fail(col, "%T where text was expected", v)
		return ""
	}
}

func (d *decoder) integer(col string, v any, required bool) (int64, bool) {
	switch x := v.(type) {
	case nil:
		if required {
			d.fail(col, "NULL")
		}
		return 0, false
	case int64:
		return x, true
	default:
		d.fail(col, "%T where an integer was expected", v)
		return 0, false
	}
}

func (d *decoder) boolean(col string, v any) bool {
	n, ok := d.integer(col, v, false)
	if ok && n != 0 && n != 1 {
		d.fail(col, "%d is not 0 or 1", n)
	}
	return n == 1
}

func (d *decoder) blob(col string, v any) []byte {
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		return x
	case string:
		return []byte(x)
	default:
		d.fail(col, "%T where bytes were expected", v)
		return nil
	}
}

func (d *decoder) millis(col string, v any, required bool) time.Time {
	if n, ok := d.integer(col, v, required); ok {
		return time.UnixMilli(n)
	}
	return time.Time{}
}

// decodeCall builds a CallRow from the callColumns values. It never panics
// and never fails: problems go to DecodeError.
func decodeCall(raw [30]any) CallRow {
	var d decoder
	var r CallRow
	r.ID, _ = d.integer("id", raw[0], true)
	r.SessionID = d.text("session_id", raw[1], true)
	r.RequestID = d.text("request_id", raw[2], false)
	r.Server = d.text("server", raw[3], true)
	r.Tool = d.text("tool", raw[4], true)
	r.Exposed = d.text("exposed", raw[5], false)
	r.PinDigest = d.text("pin_digest", raw[6], false)
	args := d.blob("args", raw[7])
	r.ArgsInvalid = d.blob("args_invalid", raw[8])
	r.ArgsDigest = d.text("args_digest", raw[9], false)
	if args != nil {
		// Digest runs the strict reader: one pass checks and hashes.
		if dg, err := canon.Digest(args); err != nil {
			d.fail("args", "not valid JSON: %v", err)
		} else if dg != r.ArgsDigest {
			d.fail("args_digest", "does not match the stored args")
		} else {
			r.Args = args
		}
	} else if r.ArgsDigest != "" {
		d.fail("args_digest", "set, but args is NULL")
	}
	r.Decision = d.text("decision", raw[10], true)
	rule, _ := d.integer("rule", raw[11], false)
	r.Rule = int(rule)
	r.Class = d.text("class", raw[12], false)
	r.Reason = d.text("reason", raw[13], false)
	r.State = d.text("state", raw[14], true)
	if r.State != "" && !knownCallState(r.State) {
		d.fail("state", "unknown state %q", r.State)
	}
	r.StartedAt = d.millis("started_at", raw[15], true)
	ended := r.State == StateDone || r.State == StateFailed || r.State == StateCancelled || r.State == StateInterrupted
	r.EndedAt = d.millis("ended_at", raw[16], ended)
	dur, _ := d.integer("duration_ms", raw[17], false)
	r.Duration = time.Duration(dur) * time.Millisecond
	r.ResultDigest = d.text("result_digest", raw[18], false)
	r.ResultBytes, _ = d.integer("result_bytes", raw[19], false)
	r.IsError = d.boolean("is_error", raw[20])
	r.Err = d.text("error", raw[21], false)
	if raw[22] != nil {
		late := &Outcome{}
		d.millis("late_at", raw[22], true)
		late.State = d.text("late_state", raw[23], true)
		ld, _ := d.integer("late_duration_ms", raw[24], false)
		late.Duration = time.Duration(ld) * time.Millisecond
		late.ResultDigest = d.text("late_result_digest", raw[25], false)
		late.ResultBytes, _ = d.integer("late_result_bytes", raw[26], false)
		late.IsError = d.boolean("late_is_error", raw[27])
		late.Err = d.text("late_error", raw[28], false)
		r.Late = late
	}
	r.Kind = d.text("kind", raw[29], true)
	switch r.Kind {
	case "", KindTool, KindPrompt, KindResource, KindSampling, KindElicitation, KindRoots:
	default:
		d.fail("kind", "unknown kind %q", r.Kind)
	}
	r.DecodeError = d.err()
	return r
}

// decodeEvent builds an Event from seq, at, kind, subject, body.
func decodeEvent(raw [5]any) Event {
	var d decoder
	var e Event
	e.Seq, _ = d.integer("seq", raw[0], true)
	e.At = d.millis("at", raw[1], true)
	e.Kind = d.text("kind", raw[2], true)
	e.Subject = d.text("subject", raw[3], true)
	body := d.blob("body", raw[4])
	switch {
	case body == nil:
		d.fail("body", "NULL")
	default:
		if err := canon.Check(body); err != nil {
			d.fail("body", "not valid JSON: %v", err)
		} else {
			e.Body = body
		}
	}
	e.DecodeError = d.err()
	return e
}
