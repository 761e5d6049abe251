package upstream

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// prompts/list_changed and resources/list_changed relist like the tools'
// list_changed; resources/updated is queued for the relay, never blocking
// the read loop.
func TestContentNotify(t *testing.T) {
	u := newClient(Spec{Name: "x"}, Options{Version: "v", Log: slog.New(slog.DiscardHandler)})
	for _, m := range []string{"notifications/prompts/list_changed", "notifications/resources/list_changed"} {
		if !u.contentNotify(m, nil) {
			t.Fatalf("%s not taken", m)
		}
		select {
		case <-u.listChanged:
		default:
			t.Fatalf("%s did not ask for a relist", m)
		}
	}
	for i := range cap(u.updated) + 5 { // a full queue drops, never blocks
		u.contentNotify("notifications/resources/updated", json.RawMessage(`{"uri":"test://`+strings.Repeat("a", i)+`"}`))
	}
	if got := <-u.updated; got != "test://" {
		t.Fatalf("first update %q", got)
	}
	if u.contentNotify("notifications/tools/list_changed", nil) || u.contentNotify("notifications/message", nil) {
		t.Fatal("took a notification that is not about prompts or resources")
	}
}

func TestParseContentCaps(t *testing.T) {
	for in, want := range map[string]ContentCaps{
		`{"capabilities":{"tools":{}}}`:                                      {},
		`{"capabilities":{"prompts":{},"resources":{"subscribe":true}}}`:     {Prompts: true, Resources: true, Subscribe: true},
		`{"capabilities":{"prompts":null,"resources":{"listChanged":true}}}`: {Resources: true},
		`not json`: {},
	} {
		if got := parseContentCaps(json.RawMessage(in)); got != want {
			t.Errorf("parseContentCaps(%s) = %+v, want %+v", in, got, want)
		}
	}
}
