// Command ledgertamper is the ledger owner's attack the witness is for,
// run by end-to-end tests as a second process with the owner's uid. It
// edits the SQLite file directly, as the sqlite3 CLI would:
//
//	ledgertamper cut PATH TOOL       erase the first call to TOOL and everything
//	                                 after it: delete the events from the one
//	                                 recording it on, the calls rows from it
//	                                 on, undo the session ends they recorded,
//	                                 and rewind chain_head to the last event kept
//	ledgertamper rewrite PATH SEQ    backdate event SEQ by an hour and
//	                                 recompute every later hash and the head
//	                                 with the format in ledger/chain.go
//
// Both leave a ledger that `mcp-guard verify` (without a witness) passes.
package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	_ "modernc.org/sqlite"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: ledgertamper cut PATH TOOL | rewrite PATH SEQ")
		os.Exit(2)
	}
	db, err := sql.Open("sqlite", os.Args[2]+"?_pragma=busy_timeout(5000)")
	if err != nil {
		fail(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "cut":
		err = cut(tx, os.Args[3])
	case "rewrite":
		var n int64
		if n, err = strconv.ParseInt(os.Args[3], 10, 64); err == nil {
			err = rewrite(tx, n)
		}
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		tx.Rollback()
		fail(err)
	}
	if err := tx.Commit(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ledgertamper:", err)
	os.Exit(1)
}

func exec(tx *sql.Tx, q string, args ...any) error {
	_, err := tx.Exec(q, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

func cut(tx *sql.Tx, tool string) error {
	var call int64
	if err := tx.QueryRow(`SELECT min(id) FROM calls WHERE tool = ?`, tool).Scan(&call); err != nil {
		return fmt.Errorf("the first call to %s: %w", tool, err)
	}
	var from int64
	if err := tx.QueryRow(`SELECT min(seq) FROM events WHERE subject = ?`, "call:"+strconv.FormatInt(call, 10)).Scan(&from); err != nil {
		return fmt.Errorf("the event recording call %d: %w", call, err)
	}
	var keepHash string
	if err := tx.QueryRow(`SELECT hash FROM events WHERE seq = ?`, from-1).Scan(&keepHash); err != nil {
		return err
	}
	// Sessions whose end is cut go back to running.
	if err := exec(tx, `UPDATE sessions SET ended_at = NULL WHERE 'session:' || id IN (SELECT subject FROM events WHERE seq >= ? AND kind = 'session.ended')`, from); err != nil {
		return err
	}
	if err := exec(tx, `DELETE FROM calls WHERE id >= ?`, call); err != nil {
		return err
	}
	if err := exec(tx, `DELETE FROM events WHERE seq >= ?`, from); err != nil {
		return err
	}
	return exec(tx, `UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1`, from-1, keepHash)
}

func rewrite(tx *sql.Tx, from int64) error {
	rows, err := tx.Query(`SELECT seq, at, kind, subject, body FROM events WHERE seq >= ? ORDER BY seq`, from)
	if err != nil {
		return err
	}
	type ev struct {
		seq, at       int64
		kind, subject string
		body          []byte
	}
	var evs []ev
	for rows.Next() {
		var e ev
		if err := rows.Scan(&e.seq, &e.at, &e.kind, &e.subject, &e.body); err != nil {
			return err
		}
		evs = append(evs, e)
	}
	rows.Close()
	var prev string
	if err := tx.QueryRow(`SELECT prev_hash FROM events WHERE seq = ?`, from).Scan(&prev); err != nil {
		return err
	}
	for i, e := range evs {
		if i == 0 {
			e.at -= 3600_000
		}
		h, err := eventHash(e.seq, e.at, e.kind, e.subject, e.body, prev)
		if err != nil {
			return err
		}
		if err := exec(tx, `UPDATE events SET at = ?, prev_hash = ?, hash = ? WHERE seq = ?`, e.at, prev, h, e.seq); err != nil {
			return err
		}
		prev = h
		if err := exec(tx, `UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1`, e.seq, h); err != nil {
			return err
		}
	}
	return nil
}

// eventHash is ledger/chain.go's: hex sha256 of the canonical encoding of
// {"at","body","kind","prev","seq","subject"}, body the stored bytes.
func eventHash(seq, at int64, kind, subject string, body []byte, prev string) (string, error) {
	b := []byte(`{"at":` + strconv.FormatInt(at, 10) + `,"body":`)
	b = append(b, body...)
	var err error
	b = append(b, `,"kind":`...)
	if b, err = canon.AppendString(b, kind); err != nil {
		return "", err
	}
	b = append(b, `,"prev":`...)
	if b, err = canon.AppendString(b, prev); err != nil {
		return "", err
	}
	b = append(b, `,"seq":`+strconv.FormatInt(seq, 10)+`,"subject":`...)
	if b, err = canon.AppendString(b, subject); err != nil {
		return "", err
	}
	b = append(b, '}')
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
