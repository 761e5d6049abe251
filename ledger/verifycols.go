package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// callColumnsDiffer names the columns of calls row key that differ from what
// event seq (the one that recorded the call: call.started, call.refused or
// call.waiting) holds, among the columns that event records and nothing
// changes later. It is Verify's hint for an edited calls row.
func callColumnsDiffer(ctx context.Context, tx *sql.Tx, key string, seq int64) ([]string, error) {
	var body []byte
	if err := tx.QueryRowContext(ctx, "SELECT body FROM events WHERE seq = ?", seq).Scan(&body); err != nil {
		return nil, fmt.Errorf("ledger: verify: read event %d: %w", seq, err)
	}
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, nil // Verify checked it is canonical JSON; not an object: no hint
	}
	id, err := strconv.ParseInt(key, 10, 64)
	if err != nil {
		return nil, nil
	}
	var (
		text    [9]sql.NullString
		rule    sql.NullInt64
		args    []byte
		invalid []byte
	)
	err = tx.QueryRowContext(ctx, `SELECT session_id, request_id, server, tool, exposed, pin_digest, args_digest, decision, class,
		rule, `+callsArgs+`, args_invalid FROM calls WHERE id = ?`, id).Scan(
		&text[0], &text[1], &text[2], &text[3], &text[4], &text[5], &text[6], &text[7], &text[8], &rule, &args, &invalid)
	if err != nil {
		return nil, nil // unreadable or gone: the digest says enough
	}
	differ := map[string]bool{}
	for i, f := range [...]struct{ col, field string }{
		{"session_id", "session"}, {"request_id", "request_id"}, {"server", "server"}, {"tool", "tool"},
		{"exposed", "exposed"}, {"pin_digest", "pin_digest"}, {"args_digest", "args_digest"},
		{"decision", "decision"}, {"class", "class"},
	} {
		raw, ok := ev[f.field]
		if !ok {
			continue
		}
		var want string
		if json.Unmarshal(raw, &want) != nil || want != text[i].String {
			differ[f.col] = true
		}
	}
	if raw, ok := ev["rule"]; ok {
		var want int64
		if json.Unmarshal(raw, &want) != nil || want != rule.Int64 {
			differ["rule"] = true
		}
	}
	if raw, ok := ev["args"]; ok {
		var got []byte
		if len(args) > 0 {
			if got, err = canon.Canonical(args); err != nil {
				got = args
			}
		} else {
			got = []byte("null")
		}
		if !bytes.Equal(got, raw) {
			differ["args"] = true
		}
	}
	if raw, ok := ev["args_invalid"]; ok {
		want := "null"
		if len(invalid) > 0 {
			want = strconv.Quote(base64.StdEncoding.EncodeToString(invalid))
		}
		if string(raw) != want {
			differ["args_invalid"] = true
		}
	}
	var out []string
	for _, c := range [...]string{"session_id", "request_id", "server", "tool", "exposed", "pin_digest",
		"args", "args_invalid", "args_digest", "decision", "rule", "class"} { // the table's order
		if differ[c] {
			out = append(out, c)
		}
	}
	return out, nil
}
