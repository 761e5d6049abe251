package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
)

// The form shows the call and offers approve and deny; a call cut for
// length is offered deny alone.
func TestHostForm(t *testing.T) {
	for _, full := range []bool{true, false} {
		raw, err := hostForm(7, "server    db\ntool      mv", full)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Message string `json:"message"`
			Schema  struct {
				Type       string `json:"type"`
				Properties map[string]struct {
					Type string   `json:"type"`
					Enum []string `json:"enum"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"requestedSchema"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(f.Message, "(approval 7)") || !strings.Contains(f.Message, "server    db\ntool      mv") {
			t.Errorf("full=%v: the form's message:\n%s", full, f.Message)
		}
		want := []string{hostApprove, hostDeny}
		if !full {
			want = []string{hostDeny}
			if !strings.Contains(f.Message, "cannot be approved here") || !strings.Contains(f.Message, "mcp-guard approvals show 7 --full") {
				t.Errorf("a cut call's form does not say where to approve it:\n%s", f.Message)
			}
		}
		got := f.Schema.Properties[hostField].Enum
		if f.Schema.Type != "object" || len(f.Schema.Properties) != 1 || strings.Join(got, ",") != strings.Join(want, ",") ||
			len(f.Schema.Required) != 1 || f.Schema.Required[0] != hostField {
			t.Errorf("full=%v: the form's schema: %s", full, raw)
		}
	}
}

// Only an accept holding exactly the one field with an offered choice, or
// a decline, decides; cancel decides nothing; anything else is refused.
func TestHostAnswer(t *testing.T) {
	for _, tc := range []struct {
		answer           string
		full             bool
		approve, ok, bad bool
	}{
		{`{"action":"accept","content":{"decision":"approve"}}`, true, true, true, false},
		{`{"action":"accept","content":{"decision":"deny"}}`, true, false, true, false},
		{`{"action":"decline"}`, true, false, true, false},
		{`{"action":"cancel"}`, true, false, false, false},
		{`{"action":"accept","content":{"decision":"deny"}}`, false, false, true, false},
		// refused
		{`{"action":"accept","content":{"decision":"approve"}}`, false, false, false, true}, // not offered: the call was cut
		{`{"action":"accept","content":{"decision":"yes"}}`, true, false, false, true},
		{`{"action":"accept","content":{"decision":"Approve"}}`, true, false, false, true},
		{`{"action":"accept","content":{"decision":"approve","also":1}}`, true, false, false, true},
		{`{"action":"accept","content":{"decision":true}}`, true, false, false, true},
		{`{"action":"accept","content":{"decision":"\u0061pprove"}}`, true, false, false, true},
		{`{"action":"accept","content":{}}`, true, false, false, true},
		{`{"action":"accept"}`, true, false, false, true},
		{`{"action":"approve"}`, true, false, false, true},
		{`{"action":"decline","action":"accept","content":{"decision":"approve"}}`, true, false, false, true}, // two readings
		{`{"action":"accept","content":{"decision":"deny","decision":"approve"}}`, true, false, false, true},
		{`[]`, true, false, false, true},
	} {
		approve, ok, err := hostAnswer(json.RawMessage(tc.answer), tc.full)
		if approve != tc.approve || ok != tc.ok || (err != nil) != tc.bad {
			t.Errorf("%s (full=%v): approve=%v ok=%v err=%v", tc.answer, tc.full, approve, ok, err)
		}
	}
}

// With ask_in = "host", the operator is not told a call waits (Waiting)
// while the host shows the form; when the host will not decide (the form
// fails, or is dismissed), Waiting hears of it after all. An approve from
// the host runs the call once, and Waiting hears nothing.
func TestPipeline_HostOnlyAskTellsWaitingWhenTheHostWillNotDecide(t *testing.T) {
	approve := json.RawMessage(`{"action":"accept","content":{"decision":"approve"}}`)
	for _, tc := range []struct {
		name  string
		host  func(ctx context.Context, asked chan<- struct{}) (json.RawMessage, error)
		heard bool // Waiting hears of the call
		ran   bool // the call reaches the forwarder
	}{
		{"form fails", func(_ context.Context, asked chan<- struct{}) (json.RawMessage, error) {
			close(asked)
			return nil, errors.New("the host is gone")
		}, true, false},
		{"form dismissed", func(_ context.Context, asked chan<- struct{}) (json.RawMessage, error) {
			close(asked)
			return json.RawMessage(`{"action":"cancel"}`), nil
		}, true, false},
		{"form open until the terminal decides", func(ctx context.Context, asked chan<- struct{}) (json.RawMessage, error) {
			close(asked)
			<-ctx.Done()
			return nil, ctx.Err()
		}, false, false},
		{"host approves", func(_ context.Context, asked chan<- struct{}) (json.RawMessage, error) {
			close(asked)
			return approve, nil
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pt := newPipeTest(t)
			rules, err := classify.Compile([]classify.Rule{{Server: "fs", Tool: "move_file", Class: classify.Write, Action: classify.Ask}})
			if err != nil {
				t.Fatal(err)
			}
			pt.p.Gate = New(rules)
			pt.p.AskIn = func(int) string { return "host" }
			heard := make(chan Waiting, 4)
			pt.p.Waiting = func(w Waiting) { heard <- w }
			asked := make(chan struct{})
			r := pt.request(KindTool, "move_file", `{"to":"x"}`)
			r.AskHost = func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) { return tc.host(ctx, asked) }
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			fwd := &forwarder{res: `{"content":[]}`}
			done := make(chan Result, 1)
			go func() { done <- pt.p.Run(ctx, r, fwd) }()
			<-asked
			if tc.heard {
				select {
				case <-heard:
				case <-time.After(10 * time.Second):
					t.Fatal("Waiting never heard of a call the host will not decide")
				}
			}
			if !tc.ran {
				denyPending(t, pt)
			}
			res := <-done
			if ran := fwd.n.Load() == 1; ran != tc.ran {
				t.Fatalf("forwarded %v, want %v (%+v)", ran, tc.ran, res)
			}
			if len(heard) != 0 {
				t.Fatalf("Waiting heard %d times more than it should", len(heard))
			}
		})
	}
}
