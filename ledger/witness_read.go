package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ReadHeads reads the heads a witness holds back, from source:
//
//	journal        journalctl -o json, the system journal
//	journal:DIR    journalctl -o json -D DIR, a journal directory
//	syslog:PATH    a syslog file (the heads' lines are found in it)
//	file:PATH      a JSONL file written by the file witness
//	head:SEQ:HASH  one head, written down by the operator
//
// Every head mcp-guard wrote is returned, for any ledger; CheckHeads picks
// those of the ledger it checks.
func ReadHeads(ctx context.Context, source string) ([]Head, error) {
	kind, arg, _ := strings.Cut(source, ":")
	switch kind {
	case "journal":
		return readJournal(ctx, arg)
	case "syslog":
		if arg == "" {
			return nil, fmt.Errorf("witness %q: want syslog:PATH, the syslog file to read", source)
		}
		return readSyslog(arg)
	case "file":
		if arg == "" {
			return nil, fmt.Errorf("witness %q: want file:PATH, the JSONL file to read", source)
		}
		return readJSONL(arg)
	case "head":
		return parseHeadArg(source, arg)
	case "otlp":
		return nil, fmt.Errorf("witness %q: a collector is write-only from here, so verify cannot read heads back from it; find the mcp_guard.ledger.head records in what the collector feeds, and check one with head:SEQ:HASH", source)
	}
	return nil, fmt.Errorf("witness %q: want journal, journal:DIR, syslog:PATH, file:PATH or head:SEQ:HASH", source)
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func parseHeadArg(source, arg string) ([]Head, error) {
	s, hash, ok := strings.Cut(arg, ":")
	seq, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil || seq < 1 || !hashRE.MatchString(hash) {
		return nil, fmt.Errorf("witness %q: want head:SEQ:HASH, as watch and verify print it (a seq from 1, a 64-digit lowercase hex hash)", source)
	}
	return []Head{{Seq: seq, Hash: hash, Why: "given", Source: "the command line"}}, nil
}

// readJournal runs journalctl for mcp-guard's heads.
func readJournal(ctx context.Context, dir string) ([]Head, error) {
	args := []string{"-o", "json", "--no-pager", "SYSLOG_IDENTIFIER=" + journalIdentifier}
	where := "the system journal"
	if dir != "" {
		args = append([]string{"-D", dir}, args...)
		where = "the journal in " + dir
	}
	cmd := exec.CommandContext(ctx, "journalctl", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		// journalctl exits 1 with "-- No entries --" on stderr when none match.
		if !errors.As(err, &ee) || !strings.Contains(stderr.String(), "No entries") {
			return nil, fmt.Errorf("witness journal: journalctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
	}
	var heads []Head
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		str := func(k string) string { s, _ := e[k].(string); return s }
		var h Head
		if s := str("MCP_GUARD_SEQ"); s != "" {
			seq, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				continue
			}
			h = Head{Ledger: str("MCP_GUARD_LEDGER"), Path: str("MCP_GUARD_PATH"), Seq: seq, Hash: str("MCP_GUARD_HASH"), Why: str("MCP_GUARD_WHY")}
		} else if m, ok := parseHeadMessage(str("MESSAGE")); ok {
			h = m // sent by the syslog witness to journald's syslog socket
		} else {
			continue
		}
		if us, err := strconv.ParseInt(str("__REALTIME_TIMESTAMP"), 10, 64); err == nil {
			h.At = time.UnixMicro(us).UTC()
		}
		h.Source = fmt.Sprintf("%s (uid %s, pid %s)", where, str("_UID"), str("_PID"))
		heads = append(heads, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("witness journal: read journalctl's output: %w", err)
	}
	return heads, nil
}

// readSyslog finds the heads' lines in a syslog file.
func readSyslog(path string) ([]Head, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("witness syslog: %w", err)
	}
	defer f.Close()
	var heads []Head
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.Contains(line, journalIdentifier) {
			continue
		}
		if h, ok := parseHeadMessage(line); ok {
			h.Source = fmt.Sprintf("%s line %d", path, n)
			heads = append(heads, h)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("witness syslog: read %s: %w", path, err)
	}
	return heads, nil
}

// readJSONL reads a file witness's lines. A line that does not decode is an
// error: the file is the witness's own, and a damaged line is news.
func readJSONL(path string) ([]Head, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("witness file: %w", err)
	}
	defer f.Close()
	var heads []Head
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var h Head
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			return nil, fmt.Errorf("witness file: %s line %d: %w", path, n, err)
		}
		h.Source = fmt.Sprintf("%s line %d", path, n)
		heads = append(heads, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("witness file: read %s: %w", path, err)
	}
	return heads, nil
}
