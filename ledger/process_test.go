package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

const helperEnv = "LEDGER_TEST_HELPER"

// TestHelperProcess is not a test: TestCASRaceBetweenProcesses runs the test
// binary again with it selected. It opens the ledger, says "ready", waits
// for "go" on stdin, then races to move the call from started to done.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "cas" {
		t.Skip("helper process only")
	}
	id, _ := strconv.ParseInt(os.Getenv("LEDGER_TEST_CALL"), 10, 64)
	l, err := Open(context.Background(), os.Getenv("LEDGER_TEST_PATH"), Options{})
	if err != nil {
		fmt.Println("RESULT error", err)
		return
	}
	defer l.Close()
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Println("RESULT error", err)
		return
	}
	err = l.RecordOutcome(context.Background(), id, Outcome{State: StateDone, ResultDigest: "d", ResultBytes: 1})
	switch {
	case err == nil:
		fmt.Println("RESULT won")
	case errors.Is(err, ErrConflict):
		fmt.Println("RESULT conflict")
	default:
		fmt.Println("RESULT error", err)
	}
}

// Proves L2 across processes: two processes race the same started->done
// transition on one call row; exactly one wins, the other gets ErrConflict,
// and the ledger holds exactly one transition event.
func TestCASRaceBetweenProcesses(t *testing.T) {
	path := newClosedLedger(t)
	l := openTest(t, path, Options{})
	s := startSession(t, l)
	id, err := l.RecordCall(context.Background(), CallStart{SessionID: s.ID(), Server: "fs", Tool: "write", Args: []byte(`{}`), Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}

	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		lines *bufio.Scanner
	}
	var children []child
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=cas", "LEDGER_TEST_PATH="+path, "LEDGER_TEST_CALL="+strconv.FormatInt(id, 10))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		children = append(children, child{cmd, stdin, bufio.NewScanner(stdout)})
	}
	readLine := func(c child, prefix string) string {
		for c.lines.Scan() {
			if line := c.lines.Text(); strings.HasPrefix(line, prefix) {
				return line
			}
		}
		t.Fatalf("child ended without %q: %v", prefix, c.lines.Err())
		return ""
	}
	for _, c := range children {
		if line := readLine(c, "READY"); line != "READY" {
			t.Fatal(line)
		}
	}
	for _, c := range children { // both wait on stdin: release them together
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	results := map[string]int{}
	for _, c := range children {
		line := readLine(c, "RESULT ")
		results[strings.TrimPrefix(line, "RESULT ")]++
	}
	if results["won"] != 1 || results["conflict"] != 1 || len(results) != 2 {
		t.Fatalf("results %v, want one won and one conflict", results)
	}
	for _, c := range children {
		c.stdin.Close()
		waitErr := make(chan error, 1)
		go func() { waitErr <- c.cmd.Wait() }()
		select {
		case err := <-waitErr:
			if err != nil {
				t.Fatalf("child: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("child did not exit")
		}
	}

	if n := countRows(t, l.rdb, `SELECT count(*) FROM events WHERE subject = ? AND kind = 'call.done'`, callSubject(id)); n != 1 {
		t.Fatalf("%d call.done events, want exactly 1", n)
	}
	row, err := l.Call(context.Background(), id)
	if err != nil || row.State != StateDone || row.DecodeError != "" {
		t.Fatalf("call after race: %+v, %v", row, err)
	}
	rep, err := l.Verify(context.Background())
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
