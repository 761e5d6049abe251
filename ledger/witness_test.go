package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
)

// listenGram is a real receiver: a unixgram socket in a fresh directory,
// as journald and syslog daemons listen.
func listenGram(t *testing.T) (path string, conn *net.UnixConn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "wit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path = filepath.Join(dir, "s")
	conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return path, conn
}

func readGram(t *testing.T, conn *net.UnixConn) []byte {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("read datagram: %v", err)
	}
	return buf[:n]
}

// parseJournal decodes the native protocol: KEY=VALUE lines, or KEY, a
// newline, a little-endian uint64 length, the value and a newline.
func parseJournal(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			t.Fatalf("field without a newline: %q", b)
		}
		line := b[:nl]
		if k, v, ok := bytes.Cut(line, []byte("=")); ok {
			out[string(k)] = string(v)
			b = b[nl+1:]
			continue
		}
		rest := b[nl+1:]
		n := binary.LittleEndian.Uint64(rest[:8])
		out[string(line)] = string(rest[8 : 8+n])
		if rest[8+n] != '\n' {
			t.Fatalf("binary field %s not ended by a newline", line)
		}
		b = rest[9+n:]
	}
	return out
}

func testHead() Head {
	return Head{Ledger: strings.Repeat("a", 64), Path: "/var/lib/x/ledger.db", Seq: 42, Hash: strings.Repeat("b", 64),
		At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Why: WhyEvery}
}

// The journal witness speaks journald's native protocol: every field,
// SYSLOG_IDENTIFIER=mcp-guard, and a path with a newline in binary form.
func TestJournalWitnessWireFormat(t *testing.T) {
	sock, conn := listenGram(t)
	w, err := OpenWitness(witnessspec.Spec{Kind: witnessspec.Journal, Path: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Probe(context.Background()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	h := testHead()
	h.Path = "/tmp/odd\nname/ledger.db"
	if err := w.Commit(context.Background(), h); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	f := parseJournal(t, readGram(t, conn))
	want := map[string]string{
		"SYSLOG_IDENTIFIER": "mcp-guard", "PRIORITY": "5",
		"MCP_GUARD_LEDGER": h.Ledger, "MCP_GUARD_SEQ": "42", "MCP_GUARD_HASH": h.Hash, "MCP_GUARD_WHY": "every",
		"MCP_GUARD_PATH": h.Path, "MCP_GUARD_AT": "2026-12-01T10:00:00.000Z",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
	back, ok := parseHeadMessage(f["MESSAGE"])
	if !ok || back.Seq != 42 || back.Hash != h.Hash || back.Ledger != h.Ledger || back.Path != h.Path || back.Why != "every" {
		t.Errorf("MESSAGE %q reads back as %+v", f["MESSAGE"], back)
	}
}

// A witness whose socket has no listener is unreachable, and says where.
func TestJournalWitnessUnreachable(t *testing.T) {
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.Journal, Path: filepath.Join(t.TempDir(), "none")})
	if err := w.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "none") {
		t.Fatalf("Probe = %v, want an error naming the socket", err)
	}
	if err := w.Commit(context.Background(), testHead()); err == nil {
		t.Fatal("Commit to no listener succeeded")
	}
}

// The syslog witness sends an RFC 3164 line that a syslog file keeps and
// verify reads back.
func TestSyslogWitnessWireFormat(t *testing.T) {
	sock, conn := listenGram(t)
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.Syslog, Path: sock})
	defer w.Close()
	h := testHead()
	if err := w.Commit(context.Background(), h); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	line := string(readGram(t, conn))
	if !strings.HasPrefix(line, "<13>") || !strings.Contains(line, " mcp-guard[") || !strings.Contains(line, "]: ledger head seq=42 ") {
		t.Fatalf("syslog line %q is not <13>TIMESTAMP mcp-guard[PID]: ledger head ...", line)
	}
	// What rsyslog writes to its file: a timestamp, the host, the tag.
	file := filepath.Join(t.TempDir(), "syslog")
	logged := "Dec  1 10:00:00 vm " + line[strings.Index(line, "mcp-guard["):] + "\nDec  1 10:00:01 vm other[1]: ledger head seq=1\n"
	if err := os.WriteFile(file, []byte(logged), 0o600); err != nil {
		t.Fatal(err)
	}
	heads, err := ReadHeads(context.Background(), "syslog:"+file)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != 1 || heads[0].Seq != 42 || heads[0].Hash != h.Hash || heads[0].Ledger != h.Ledger {
		t.Fatalf("heads read back: %+v", heads)
	}
}

// The file witness appends one JSON line per head; ReadHeads reads them
// back in order.
func TestFileWitnessRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "heads.jsonl")
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.File, Path: file})
	if err := w.Probe(context.Background()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("Probe created the file (check must not): %v", err)
	}
	gone, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.File, Path: filepath.Join(t.TempDir(), "no", "dir", "h.jsonl")})
	if err := gone.Probe(context.Background()); err == nil {
		t.Fatal("Probe of a file in a missing directory succeeded")
	}
	h1, h2 := testHead(), testHead()
	h2.Seq, h2.Why = 43, WhyStop
	for _, h := range []Head{h1, h2} {
		if err := w.Commit(context.Background(), h); err != nil {
			t.Fatal(err)
		}
	}
	heads, err := ReadHeads(context.Background(), "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != 2 || heads[0].Seq != 42 || heads[1].Seq != 43 || heads[1].Why != "stop" || !heads[0].At.Equal(h1.At) {
		t.Fatalf("heads read back: %+v", heads)
	}
	if _, err := ReadHeads(context.Background(), "head:42:"+h1.Hash); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"head:0:" + h1.Hash, "head:42:XYZ", "head:42", "nowhere:x", "file:"} {
		if _, err := ReadHeads(context.Background(), bad); err == nil {
			t.Errorf("ReadHeads(%q) accepted it", bad)
		}
	}
}

// rewriteChain is the attack the witness is for: edit event seq's time
// and recompute every later hash and the chain head with the format in
// chain.go, through a plain connection, as the file's owner can.
func rewriteChain(t *testing.T, db *sql.DB, from int64) {
	t.Helper()
	rows, err := db.Query(`SELECT seq, at, kind, subject, body FROM events WHERE seq >= ? ORDER BY seq`, from)
	if err != nil {
		t.Fatal(err)
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
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	rows.Close()
	var prev string
	if err := db.QueryRow(`SELECT prev_hash FROM events WHERE seq = ?`, from).Scan(&prev); err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if i == 0 {
			e.at -= 3600_000 // backdated an hour
		}
		h, err := eventHash(e.seq, e.at, e.kind, e.subject, e.body, prev)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `UPDATE events SET at = ?, prev_hash = ?, hash = ? WHERE seq = ?`, e.at, prev, h, e.seq)
		prev = h
		mustExec(t, db, `UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1`, e.seq, h)
	}
}

// cutTail deletes the events after keep and rewinds the chain head to it.
func cutTail(t *testing.T, db *sql.DB, keep int64) {
	t.Helper()
	var h string
	if err := db.QueryRow(`SELECT hash FROM events WHERE seq = ?`, keep).Scan(&h); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `DELETE FROM events WHERE seq > ?`, keep)
	mustExec(t, db, `UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1`, keep, h)
}

// witnessedLedger is a ledger of 10 events whose heads at 5 and 10 were
// committed to a file witness.
func witnessedLedger(t *testing.T) (l *Ledger, path string, heads []Head) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ledger.db")
	l = openTest(t, path, Options{})
	file := filepath.Join(t.TempDir(), "heads.jsonl")
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.File, Path: file})
	com := NewCommitter(l, []Witness{w}, CommitterOptions{})
	ctx := context.Background()
	appendEvents(t, l, 5)
	if err := com.Commit(ctx, WhyStart); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, l, 5)
	if err := com.Commit(ctx, WhyStop); err != nil {
		t.Fatal(err)
	}
	heads, err := ReadHeads(ctx, "file:"+file)
	if err != nil || len(heads) != 2 || heads[0].Seq != 5 || heads[1].Seq != 10 {
		t.Fatalf("witnessed heads: %+v, %v", heads, err)
	}
	return l, path, heads
}

func checkHeads(t *testing.T, l *Ledger, heads []Head) WitnessReport {
	t.Helper()
	rep, err := l.CheckHeads(context.Background(), heads)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// An untouched ledger matches its witnessed heads.
func TestCheckHeadsMatch(t *testing.T) {
	l, _, heads := witnessedLedger(t)
	rep := checkHeads(t, l, heads)
	if !rep.OK || rep.Heads != 2 || rep.Covered.Seq != 10 || rep.Uncovered() != "" {
		t.Fatalf("report: %+v", rep)
	}
	appendEvents(t, l, 2)
	if u := checkHeads(t, l, heads).Uncovered(); !strings.Contains(u, "events 11 to 12") {
		t.Fatalf("Uncovered() = %q, want the tail 11 to 12 named", u)
	}
}

// A tail cut with the head rewound: Verify passes, the witness shows it.
func TestCheckHeadsDetectsTruncation(t *testing.T) {
	l, path, heads := witnessedLedger(t)
	cutTail(t, plainDB(t, path), 7)
	if rep, err := l.Verify(context.Background()); err != nil || !rep.OK {
		t.Fatalf("Verify after the cut: %+v, %v (it cannot see this; the witness is what can)", rep, err)
	}
	rep := checkHeads(t, l, heads)
	if rep.OK || rep.Finding != WitnessTruncated || !strings.Contains(rep.Problem, "saw seq 10") || !strings.Contains(rep.Problem, "ends at seq 7") {
		t.Fatalf("report: %+v", rep)
	}
}

// A chain recomputed from an edited event: Verify passes, the witness
// names the first witnessed seq that differs.
func TestCheckHeadsDetectsRewrite(t *testing.T) {
	l, path, heads := witnessedLedger(t)
	rewriteChain(t, plainDB(t, path), 3)
	if rep, err := l.Verify(context.Background()); err != nil || !rep.OK {
		t.Fatalf("Verify after the rewrite: %+v, %v", rep, err)
	}
	rep := checkHeads(t, l, heads)
	if rep.OK || rep.Finding != WitnessRewritten || !strings.Contains(rep.Problem, "saw seq 5 with hash") {
		t.Fatalf("report: %+v", rep)
	}
	// Rewritten from event 1, the ledger has a new identity: the heads
	// for its path then name only another ledger.
	rewriteChain(t, plainDB(t, path), 1)
	rep = checkHeads(t, l, heads)
	if rep.OK || rep.Finding != WitnessReplaced {
		t.Fatalf("report after a rewrite from event 1: %+v", rep)
	}
}

// Two witnessed heads of one ledger at one seq with different hashes fail,
// whichever is true; a head given by hand that matches passes.
func TestCheckHeadsConflict(t *testing.T) {
	l, _, heads := witnessedLedger(t)
	forged := heads[1]
	forged.Hash = strings.Repeat("f", 64)
	forged.Source = "forged"
	rep := checkHeads(t, l, append(heads, forged))
	if rep.OK || rep.Finding != WitnessConflict || !strings.Contains(rep.Problem, "two heads for seq 10") {
		t.Fatalf("report: %+v", rep)
	}
	given := Head{Seq: heads[0].Seq, Hash: heads[0].Hash, Why: "given"}
	if rep := checkHeads(t, l, []Head{given}); !rep.OK || rep.Heads != 1 {
		t.Fatalf("a matching head given by hand: %+v", rep)
	}
}

// The committer's background loop commits a head once witness_every
// events were committed, off any writer's path.
func TestCommitterEveryEvents(t *testing.T) {
	l := openTest(t, "", Options{})
	sock, conn := listenGram(t)
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.Journal, Path: sock})
	com := NewCommitter(l, []Witness{w}, CommitterOptions{Every: 3, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go com.Run(ctx)
	appendEvents(t, l, 3)
	f := parseJournal(t, readGram(t, conn))
	if f["MCP_GUARD_WHY"] != WhyEvery || f["MCP_GUARD_SEQ"] != "3" {
		t.Fatalf("head committed: %v", f)
	}
	// A sync commit of a head already witnessed sends nothing; a new one does.
	if err := com.Commit(ctx, "exec"); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, l, 1)
	if err := com.Commit(ctx, "exec"); err != nil {
		t.Fatal(err)
	}
	f = parseJournal(t, readGram(t, conn))
	if f["MCP_GUARD_WHY"] != "exec" || f["MCP_GUARD_SEQ"] != "4" {
		t.Fatalf("sync head: %v", f)
	}
	// The next head is Every events after the last one witnessed: seq 7.
	appendEvents(t, l, 3)
	f = parseJournal(t, readGram(t, conn))
	if f["MCP_GUARD_WHY"] != WhyEvery || f["MCP_GUARD_SEQ"] != "7" {
		t.Fatalf("head committed after the exec head: %v", f)
	}
}

// A committer with no reachable witness fails its commit (serve refuses
// an exec call with it when witness_required is true).
func TestCommitterNoWitness(t *testing.T) {
	l := openTest(t, "", Options{})
	appendEvents(t, l, 1)
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.Journal, Path: filepath.Join(t.TempDir(), "gone")})
	com := NewCommitter(l, []Witness{w}, CommitterOptions{})
	if err := com.Commit(context.Background(), "exec"); err == nil || !strings.Contains(err.Error(), "no witness took") {
		t.Fatalf("Commit = %v", err)
	}
}

// New events wait at most witness_interval to be witnessed; with none,
// the interval commits nothing.
func TestCommitterInterval(t *testing.T) {
	l := openTest(t, "", Options{})
	sock, conn := listenGram(t)
	w, _ := OpenWitness(witnessspec.Spec{Kind: witnessspec.Journal, Path: sock})
	com := NewCommitter(l, []Witness{w}, CommitterOptions{Every: 1000, Interval: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	appendEvents(t, l, 2)
	go com.Run(ctx)
	f := parseJournal(t, readGram(t, conn))
	if f["MCP_GUARD_WHY"] != WhyInterval || f["MCP_GUARD_SEQ"] != "2" {
		t.Fatalf("head committed: %v", f)
	}
	appendEvents(t, l, 1)
	f = parseJournal(t, readGram(t, conn))
	if f["MCP_GUARD_WHY"] != WhyInterval || f["MCP_GUARD_SEQ"] != "3" {
		t.Fatalf("the next head: %v (an interval with no new events must send nothing)", f)
	}
}

// A collector is write-only from here: verify --witness otlp says so
// instead of reading nothing and passing.
func TestReadHeads_OTLPIsWriteOnly(t *testing.T) {
	_, err := ReadHeads(context.Background(), "otlp")
	if err == nil || !strings.Contains(err.Error(), "write-only") || !strings.Contains(err.Error(), "head:SEQ:HASH") {
		t.Fatalf("ReadHeads(otlp) = %v", err)
	}
}
