package proxy

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// fakeupSpec is an upstream named name: the hostile fake upstream running
// script in this process (fakeupstream.Serve), reached over an in-memory
// pipe (upstream.Spec.Dial) and recording each line it reads in record.
// Each start (the first, each restart) runs a fresh fake on the same
// script and record.
func fakeupSpec(t *testing.T, name, script, record string) up.Spec {
	t.Helper()
	sp := filepath.Join(t.TempDir(), name+".script.json")
	if err := os.WriteFile(sp, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--script", sp, "--record", record}
	return up.Spec{
		Name: name,
		Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
			ours, theirs := net.Pipe()
			go fakeupstream.Serve(context.WithoutCancel(ctx), args, theirs, io.Discard)
			return ours, nil
		},
	}
}
