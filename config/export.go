package config

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
)

// ExportConfig is the [export] table: where decisions, outcomes and chain
// heads are sent besides the ledger.
type ExportConfig struct {
	// OTLP is an OpenTelemetry collector's OTLP/HTTP base URL
	// ("http://127.0.0.1:4318"); empty: no export.
	OTLP string `toml:"otlp"`
	// IncludeArguments sends the arguments' bytes; off by default, they
	// never leave the ledger.
	IncludeArguments bool `toml:"include_arguments"`
	// Headers are sent to the collector (an API key); HeadersEnv names the
	// environment variable each header's value is read from. Both are
	// secrets: never printed or logged.
	Headers    map[string]string `toml:"headers"`
	HeadersEnv map[string]string `toml:"headers_env"`
}

// ExportHeader is the headers sent to the collector, values read from the
// environment for headers_env.
func (e ExportConfig) ExportHeader(env EnvFunc) (map[string]string, error) {
	h := map[string]string{}
	for k, v := range e.Headers {
		h[k] = v
	}
	for k, name := range e.HeadersEnv {
		v, ok := env(name)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("export.headers_env: %s: $%s is not set in mcp-guard's environment", k, name)
		}
		h[k] = strings.TrimSpace(v)
	}
	return h, nil
}

func checkExport(e ExportConfig, w Witness, add, warn func(format string, a ...any)) {
	if e.OTLP == "" {
		if e.IncludeArguments || len(e.Headers) > 0 || len(e.HeadersEnv) > 0 {
			add("export: include_arguments and headers need export.otlp, the collector's URL")
		}
		for _, s := range w.Specs {
			if s.Kind == witnessspec.OTLP {
				add("ledger.witness: \"otlp\" needs [export] otlp, the collector's URL")
			}
		}
		return
	}
	u, err := url.Parse(e.OTLP)
	switch {
	case err != nil:
		add("export.otlp: %q is not a URL", e.OTLP)
		return
	case u.Scheme != "http" && u.Scheme != "https":
		add("export.otlp: %q: want http:// or https:// (OTLP/HTTP, e.g. http://127.0.0.1:4318)", e.OTLP)
		return
	case u.Host == "":
		add("export.otlp: %q: no host", e.OTLP)
		return
	case u.User != nil:
		add("export.otlp: has a user or password in it; put credentials in headers or headers_env, which are never shown")
		return
	case u.RawQuery != "" || u.Fragment != "":
		add("export.otlp: %s: remove the ?query or #fragment; records go to /v1/logs and /v1/traces under the URL", showURL(u))
		return
	}
	creds := len(e.Headers) > 0 || len(e.HeadersEnv) > 0
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		if creds {
			add("export.otlp: %s is plain http:// to another machine, so the headers would travel unencrypted; use https://", showURL(u))
		} else {
			warn("export.otlp: %s is plain http:// to another machine: anyone on the path can read every decision; use https://", showURL(u))
		}
	}
	check := func(k string) {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case !headerNameRE.MatchString(k):
			add("export.headers: %q is not a valid header name", k)
		case ck == "Content-Type" || ck == "Content-Length" || ck == "Host":
			add("export.headers: %s is set by mcp-guard itself", ck)
		}
	}
	for k, v := range e.Headers {
		check(k)
		if strings.ContainsAny(v, "\r\n\x00") {
			add("export.headers: the value of %s has a line break or NUL (value not shown)", http.CanonicalHeaderKey(k))
		}
	}
	for k, name := range e.HeadersEnv {
		check(k)
		if _, dup := e.Headers[k]; dup {
			add("export.headers_env: %s is also in export.headers; give it once", k)
		}
		if !envNameRE.MatchString(name) {
			add("export.headers_env: %s: %q is not a valid variable name", k, name)
		}
	}
}
