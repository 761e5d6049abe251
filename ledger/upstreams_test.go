package ledger

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// An upstream start is an event in the chain (verify covers it), with the
// sandbox's digest when there is one; one without a server is refused.
func TestRecordUpstreamStart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	l := openTest(t, path, Options{})
	if err := l.RecordUpstreamStart(ctx, UpstreamStart{Server: "fs", Transport: "stdio", PID: 42, Sandbox: "sha256:ab", LandlockABI: 7, NotEnforced: []string{}}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordUpstreamStart(ctx, UpstreamStart{Server: "web", Transport: "http"}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordUpstreamStart(ctx, UpstreamStart{Transport: "stdio"}); err == nil || !strings.Contains(err.Error(), "server and transport are required") {
		t.Fatalf("a start without a server: %v", err)
	}
	evs, err := l.Events(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Kind == "upstream.started" {
			got = append(got, e.Subject+" "+string(e.Body))
		}
	}
	want := []string{
		`upstream:fs {"landlock_abi":7,"not_enforced":[],"pid":42,"sandbox":"sha256:ab","server":"fs","session":"","transport":"stdio"}`,
		`upstream:web {"server":"web","session":"","transport":"http"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
