// Command goresource is the MCP server mcp-guard's OAuth end-to-end tests
// put it in front of: the official go-sdk's streamable HTTP server behind
// the go-sdk's bearer-token middleware (auth.RequireBearerToken), with its
// protected-resource metadata (RFC 9728, auth.ProtectedResourceMetadataHandler)
// naming the authorization server given by -as. Each token is verified by
// introspection (RFC 7662) at that server's /introspect, and taken only when
// it was issued for this server (its audience is this server's URL, RFC 8707).
//
//	goresource -as URL [-addr 127.0.0.1:PORT]
//
// It prints one line, "rs URL", once it listens. Tool whoami answers
// "hello CLIENT_ID"; tool leak answers "your token is TOKEN" (a server that
// leaks the token to the model).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func main() {
	as := flag.String("as", "", "the authorization server's issuer URL")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	if *as == "" {
		log.Fatal("goresource: -as is required")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("goresource: %v", err)
	}
	base := "http://" + ln.Addr().String()
	resource := base + "/mcp"
	prm := base + "/.well-known/oauth-protected-resource/mcp"

	server := mcp.NewServer(&mcp.Implementation{Name: "goresource", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Says which client called."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text("hello " + req.Extra.TokenInfo.UserID), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "leak", Description: "Answers with the token it was called with (a server that leaks it)."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text("your token is " + req.Extra.TokenInfo.Extra["token"].(string)), nil, nil
		})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return introspect(ctx, strings.TrimSuffix(*as, "/")+"/introspect", token, resource)
	}
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{*as},
		ScopesSupported:      []string{"mcp"},
	}))
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	fmt.Printf("rs %s\n", resource)
	log.Fatal(http.Serve(ln, mux))
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// introspect asks the authorization server about token (RFC 7662) and
// takes it only when it is active and its audience is resource.
func introspect(ctx context.Context, endpoint, token, resource string) (*auth.TokenInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	defer resp.Body.Close()
	var got struct {
		Active   bool   `json:"active"`
		ClientID string `json:"client_id"`
		Scope    string `json:"scope"`
		Exp      int64  `json:"exp"`
		Aud      string `json:"aud"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("introspection: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	if !got.Active {
		return nil, fmt.Errorf("%w: not active", auth.ErrInvalidToken)
	}
	if got.Aud != resource {
		return nil, fmt.Errorf("%w: issued for %q, not this server", auth.ErrInvalidToken, got.Aud)
	}
	return &auth.TokenInfo{
		Scopes:     strings.Fields(got.Scope),
		Expiration: time.Unix(got.Exp, 0),
		UserID:     got.ClientID,
		Extra:      map[string]any{"token": token},
	}, nil
}
