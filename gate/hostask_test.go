package gate

import (
	"encoding/json"
	"strings"
	"testing"
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
