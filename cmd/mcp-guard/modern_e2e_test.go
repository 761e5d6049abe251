package main

import "path/filepath"

// Protocol 2026-07-28 on the host side (PF7) through the binary: the
// go-sdk host at every revision (fidelity_gosdk_e2e_test.go). The walks of
// the proxy package hold the rest (modern_walk_test.go and beside it).

const modernVersion = "2026-07-28"

// modernHTTPServe starts serve --http on cfg with the bearer token
// tok-modern-0123456789abcdef and returns its endpoint.
func (e *env) modernHTTPServe(cfg string) string {
	e.t.Helper()
	tokenFile := filepath.Join(e.dir, "token")
	writeFile(e.t, tokenFile, "tok-modern-0123456789abcdef\n")
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0", "--token-file", tokenFile)
	return endpoint
}
