// Command relay is the do-nothing stdio relay mcp-guard's benchmarks measure
// against: it starts the command given as its arguments and copies bytes
// both ways, nothing else. It is the floor a stdio proxy cannot go below.
//
// With --ledger PATH it is the floor a durable proxy cannot go below: it
// copies lines, and records each tools/call request in mcp-guard's ledger
// at PATH (one durable commit, the statements serve makes for an allowed
// call) before it forwards it, and the call's outcome, lazily, when its
// answer comes back; it checks and decides nothing. Measured in one
// process, with the same idle waits as serve's (the commit's fsync leaves
// the CPUs idle, and every pipe hop after it wakes one), it is the floor
// scripts/bench subtracts from mcp-guard's latency and CPU.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
)

func main() {
	args := os.Args[1:]
	var ledgerPath string
	if len(args) > 0 && args[0] == "--ledger" {
		if len(args) < 2 || args[1] == "" {
			fmt.Fprintln(os.Stderr, "relay: --ledger needs the path of the ledger file")
			os.Exit(2)
		}
		ledgerPath, args = args[1], args[2:]
	}
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: relay [--ledger PATH] COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	if ledgerPath == "" {
		go func() {
			io.Copy(in, os.Stdin)
			in.Close()
		}()
		io.Copy(os.Stdout, out)
		cmd.Wait()
		return
	}
	d, err := newDurable(ledgerPath)
	if err != nil {
		fail(fmt.Errorf("--ledger %s: %w", ledgerPath, err))
	}
	go func() {
		d.requests(os.Stdin, in)
		in.Close()
	}()
	d.answers(out, os.Stdout)
	cmd.Wait()
	if err := d.l.Close(); err != nil { // the outcomes still queued
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "relay:", err)
	os.Exit(1)
}

// durable is the relay with a ledger: each tools/call recorded before it
// goes on, its outcome when its answer comes back.
type durable struct {
	l       *ledger.Ledger
	session string

	mu      sync.Mutex
	pending map[string]started // by the request's raw id
}

type started struct {
	id   int64
	when time.Time
}

func newDurable(path string) (*durable, error) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		return nil, err
	}
	s, err := l.StartSession(ctx, ledger.SessionInfo{})
	if err != nil {
		return nil, err
	}
	return &durable{l: l, session: s.ID(), pending: map[string]started{}}, nil
}

// pinDigest stands for the digest of the tool's pinned definition that
// serve records with each call: the same bytes in the row.
const pinDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// message is what the relay reads of a line: enough to know a call and
// its answer.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// requests copies the host's lines to the server, each tools/call after
// it is committed. Calls are recorded side by side by long-lived workers,
// as serve records them, so that calls made at once share commits (and a
// commit does not grow a fresh goroutine's stack each time).
func (d *durable) requests(r io.Reader, w io.Writer) {
	var wmu sync.Mutex
	write := func(line []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		w.Write(line)
	}
	calls := make(chan call)
	var workers sync.WaitGroup
	defer workers.Wait() // every call read is forwarded before the server's input closes
	defer close(calls)
	for range 16 {
		workers.Go(func() {
			for c := range calls {
				d.record(c)
				write(c.line)
			}
		})
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := append(sc.Bytes(), '\n')
		var m message
		if json.Unmarshal(line, &m) != nil || m.Method != "tools/call" || len(m.ID) == 0 {
			write(line)
			continue
		}
		calls <- call{m: m, line: bytes.Clone(line)}
	}
}

// call is a tools/call on its way to a worker.
type call struct {
	m    message
	line []byte
}

// record commits c's call durably and notes it for its answer.
func (d *durable) record(c call) {
	args := c.m.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	id, err := d.l.RecordCall(context.Background(), ledger.CallStart{SessionID: d.session, RequestID: string(c.m.ID),
		Server: "relay", Tool: c.m.Params.Name, Exposed: c.m.Params.Name, PinDigest: pinDigest, Args: args, Decision: "allow", Rule: 1, Class: "read"})
	if err != nil {
		fail(err)
	}
	d.mu.Lock()
	d.pending[string(c.m.ID)] = started{id: id, when: time.Now()}
	d.mu.Unlock()
}

// answers copies the server's lines to the host, recording a call's
// outcome (lazily, as serve does) when its answer passes.
func (d *durable) answers(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method == "" && len(m.ID) > 0 {
			d.mu.Lock()
			s, ok := d.pending[string(m.ID)]
			delete(d.pending, string(m.ID))
			d.mu.Unlock()
			if ok {
				sum := sha256.Sum256(line)
				d.l.RecordOutcomeLazy(s.id, ledger.Outcome{State: ledger.StateDone, ResultDigest: hex.EncodeToString(sum[:]),
					ResultBytes: int64(len(line)), Duration: time.Since(s.when)}, func(error) {})
			}
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return
		}
	}
}
