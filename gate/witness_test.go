package gate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// witnessPipe is a pipeline over a real ledger whose witness stage commits
// to w through a real committer; rules allow fs/run_* (exec), fs/rm_*
// (destructive) and fs/read_* (read).
func witnessPipe(t *testing.T, spec witnessspec.Spec, required bool) *pipeTest {
	t.Helper()
	pt := newPipeTest(t)
	rules, err := classify.Compile([]classify.Rule{
		{Server: "fs", Tool: "run_*", Class: classify.Exec, Action: classify.Allow},
		{Server: "fs", Tool: "rm_*", Class: classify.Destructive, Action: classify.Allow},
		{Server: "fs", Tool: "read_*", Class: classify.Read, Action: classify.Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ledger.OpenWitness(spec)
	if err != nil {
		t.Fatal(err)
	}
	com := ledger.NewCommitter(pt.l, []ledger.Witness{w}, ledger.CommitterOptions{Every: 1000, Interval: time.Hour})
	pt.p.Gate = New(rules)
	pt.p.Witness, pt.p.WitnessRequired = com.Commit, required
	return pt
}

func fileHeads(t *testing.T, path string) []ledger.Head {
	t.Helper()
	hs, err := ledger.ReadHeads(context.Background(), "file:"+path)
	if err != nil && !strings.Contains(err.Error(), "no such file") {
		t.Fatal(err)
	}
	return hs
}

// The witness stage commits the head holding an exec or destructive call
// before the call is forwarded, and nothing for a read call.
func TestPipeline_WitnessBeforeExecForward(t *testing.T) {
	file := filepath.Join(t.TempDir(), "heads.jsonl")
	pt := witnessPipe(t, witnessspec.Spec{Kind: witnessspec.File, Path: file}, false)
	ctx := context.Background()
	for _, tc := range []struct{ tool, why string }{{"read_file", ""}, {"run_cmd", "exec"}, {"rm_file", "destructive"}} {
		before := len(fileHeads(t, file))
		var atForward []ledger.Head
		var fileHead ledger.Head
		fwd := ForwardFunc(func(ctx context.Context, call int64, _ func(json.RawMessage, error)) (json.RawMessage, error) {
			atForward = fileHeads(t, file)
			var err error
			fileHead, err = pt.l.FileHead(ctx)
			return json.RawMessage(`{"content":[]}`), err
		})
		res := pt.p.Run(ctx, pt.request(KindTool, tc.tool, `{}`), fwd)
		if res.Status != Done {
			t.Fatalf("%s: status %v %s", tc.tool, res.Status, res.Message)
		}
		if tc.why == "" {
			if len(atForward) != before {
				t.Fatalf("%s (read): the witness stage committed a head: %+v", tc.tool, atForward[before:])
			}
			continue
		}
		if len(atForward) != before+1 {
			t.Fatalf("%s: %d heads in the witness when it was forwarded, want %d", tc.tool, len(atForward), before+1)
		}
		h := atForward[before]
		if h.Why != tc.why || h.Seq != fileHead.Seq || h.Hash != fileHead.Hash {
			t.Fatalf("%s: witnessed %+v before forwarding, the ledger's head (holding the call) is seq %d", tc.tool, h, fileHead.Seq)
		}
	}
}

// With witness_required, an exec call whose head no witness takes is not
// forwarded, and the ledger says why; without it, the call goes on.
func TestPipeline_WitnessRequiredRefusesExec(t *testing.T) {
	gone := witnessspec.Spec{Kind: witnessspec.Journal, Path: filepath.Join(t.TempDir(), "no-journal")}
	ctx := context.Background()

	pt := witnessPipe(t, gone, true)
	fwd := &forwarder{res: `{"content":[]}`}
	res := pt.p.Run(ctx, pt.request(KindTool, "run_cmd", `{}`), fwd)
	if res.Status != Refused || fwd.n.Load() != 0 || !strings.Contains(res.Message, "could not commit the ledger's chain head to a witness") {
		t.Fatalf("required: status %v, forwarded %d, message %q", res.Status, fwd.n.Load(), res.Message)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := pt.l.Call(ctx, res.CallID)
		if err != nil {
			t.Fatal(err)
		}
		if c.State == "failed" {
			if !strings.Contains(c.Err, "witness_required is true") {
				t.Fatalf("recorded error %q does not say why", c.Err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %d still %q: the refusal was not recorded", res.CallID, c.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A read call never waits for the witness, required or not.
	if res := pt.p.Run(ctx, pt.request(KindTool, "read_x", `{}`), fwd); res.Status != Done {
		t.Fatalf("read call with an unreachable required witness: %v %s", res.Status, res.Message)
	}

	pt = witnessPipe(t, gone, false)
	fwd = &forwarder{res: `{"content":[]}`}
	if res := pt.p.Run(ctx, pt.request(KindTool, "run_cmd", `{}`), fwd); res.Status != Done || fwd.n.Load() != 1 {
		t.Fatalf("not required: status %v, forwarded %d", res.Status, fwd.n.Load())
	}
}
