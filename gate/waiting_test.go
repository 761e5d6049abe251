package gate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Pipeline.Waiting hears once of each request held for the operator, with
// its approval ID and no argument; a request that does not wait is not
// heard of.
func TestPipeline_WaitingHeardOncePerAsk(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args string
		kind             Kind
		want             *Waiting // nil: not heard of
	}{
		{name: "tool ask", kind: KindTool, tool: "move_file", args: `{"to":"SECRET"}`, want: &Waiting{Kind: "tool", Server: "fs", Name: "move_file"}},
		{name: "elicitation ask", kind: KindElicitation, tool: "elicitation/create", args: `{"message":"SECRET"}`, want: &Waiting{Kind: "elicitation", Server: "fs", Name: "elicitation/create"}},
		{name: "allowed", kind: KindTool, tool: "write_file", args: `{"to":"SECRET"}`},
		{name: "denied", kind: KindTool, tool: "delete_all", args: `{"to":"SECRET"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pt := newPipeTest(t)
			rules, err := classify.Compile([]classify.Rule{
				{Server: "fs", Tool: "write_file", Class: classify.Write, Action: classify.Allow},
				{Server: "fs", Tool: "delete_*", Class: classify.Destructive, Action: classify.Deny},
				{Server: "fs", Tool: "move_file", Class: classify.Write, Action: classify.Ask},
			})
			if err != nil {
				t.Fatal(err)
			}
			pt.p.Gate = New(rules, WithClientAccess(map[string]ClientAccess{"fs": {Elicitation: config.AccessAsk}}))
			var mu sync.Mutex
			var heard []Waiting
			pt.p.Waiting = func(w Waiting) { mu.Lock(); heard = append(heard, w); mu.Unlock() }
			r := pt.request(tc.kind, tc.tool, tc.args)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if tc.want != nil {
				go denyPending(t, pt)
			}
			pt.p.Run(ctx, r, &forwarder{res: `{"content":[]}`})
			mu.Lock()
			defer mu.Unlock()
			if tc.want == nil {
				if len(heard) != 0 {
					t.Fatalf("heard %+v of a request that did not wait", heard)
				}
				return
			}
			if len(heard) != 1 {
				t.Fatalf("heard %d times, want once: %+v", len(heard), heard)
			}
			as, _ := pt.l.Approvals(context.Background(), "", 0, 10)
			want := *tc.want
			want.Approval = as[0].ID
			if heard[0] != want {
				t.Fatalf("heard %+v, want %+v", heard[0], want)
			}
			if strings.Contains(fmt.Sprint(heard[0]), "SECRET") {
				t.Fatalf("argument text reached Waiting: %+v", heard[0])
			}
		})
	}
}

// A resource read's URI is its argument: Waiting never names it. (A
// resource rule allows or denies today; this holds if one ever asks.)
func TestPipeline_WaitingLeavesOutAResourceURI(t *testing.T) {
	pt := newPipeTest(t)
	var heard []Waiting
	pt.p.Waiting = func(w Waiting) { heard = append(heard, w) }
	pt.p.tellWaiting(pt.request(KindResource, "file:///home/me/SECRET", `{"uri":"file:///home/me/SECRET"}`), 5)
	if want := (Waiting{Kind: "resource", Server: "fs", Approval: 5}); len(heard) != 1 || heard[0] != want {
		t.Fatalf("heard %+v, want %+v", heard, want)
	}
}

// denyPending denies the one pending approval once it is there.
func denyPending(t *testing.T, pt *pipeTest) {
	for range 1000 {
		as, err := pt.l.Approvals(context.Background(), ledger.ApprovalPending, 0, 10)
		if err == nil && len(as) == 1 {
			shown, err := approvals.Decidable(as[0])
			if err == nil {
				err = pt.l.DecideApproval(context.Background(), as[0].ID, shown, false, "no", approvals.Decidable)
			}
			if err != nil {
				t.Error(err)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("no approval appeared")
}
