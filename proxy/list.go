package proxy

import (
	"context"
	"log/slog"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/pin"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// ListTools starts one upstream, walks its tools/list and stops it. Nothing is
// pinned, recorded or exposed: it is what `mcp-guard init` reads to write a
// starter rule per tool. The same caps as serve apply.
func ListTools(ctx context.Context, spec up.Spec, limits config.Limits, logDir, version string, log *slog.Logger) ([]pin.Tool, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u, err := startUpstream(ctx, nil, spec, limits, logDir, version, log)
	if err != nil {
		return nil, err
	}
	defer u.Close()
	ctx, cancel := context.WithTimeout(ctx, limits.StartTimeout)
	defer cancel()
	tools, err := listTools(ctx, u)
	if err != nil {
		return nil, u.Reason(ctx, err)
	}
	return tools, nil
}
