package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// nameMapper is an HTTP proxy between a host that knows a server's own
// names and mcp-guard, which shows them under the server's name: it undoes
// only that prefix, so a suite written for the server can run through
// mcp-guard unchanged. Requests get the prefix (tools/call and prompts/get
// names, resources/read|subscribe|unsubscribe URIs, completion/complete
// refs); in answers, JSON or SSE, the strings `"<server>__` and
// `"mcp-guard://<server>/` lose it, every other byte as mcp-guard sent it.
// Host and Origin pass unchanged, so mcp-guard's DNS-rebinding checks see
// what the host sent.
type nameMapper struct {
	server string
}

// mapNames starts the proxy in front of endpoint (mcp-guard's /mcp URL) and
// returns the URL a host uses instead; it is stopped with the test.
func mapNames(t *testing.T, server, endpoint string) string {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	m := nameMapper{server: server}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = target.Path
			r.Out.Host = r.In.Host
			if r.In.Method != http.MethodPost || r.In.Body == nil {
				return
			}
			b, err := io.ReadAll(r.In.Body)
			if err != nil {
				return // the proxy answers 502 when the body cannot be sent
			}
			b = m.request(b)
			r.Out.Body = io.NopCloser(bytes.NewReader(b))
			r.Out.ContentLength = int64(len(b))
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
			resp.Body = m.answer(resp.Body)
			return nil
		},
		FlushInterval: -1,
		ErrorLog:      log.New(testWriter{t}, "name mapper: ", 0),
	}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// testWriter writes a logger's lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// request adds the prefix where a request names one of the server's tools,
// prompts or resources. Anything it cannot read as one JSON-RPC request goes
// as it came.
func (m nameMapper) request(b []byte) []byte {
	var msg map[string]any
	if json.Unmarshal(b, &msg) != nil {
		return b
	}
	params, _ := msg["params"].(map[string]any)
	if params == nil {
		return b
	}
	name := func(o map[string]any, k string) {
		if s, ok := o[k].(string); ok {
			o[k] = m.server + "__" + s
		}
	}
	uri := func(o map[string]any, k string) {
		if s, ok := o[k].(string); ok {
			o[k] = "mcp-guard://" + m.server + "/" + s
		}
	}
	switch msg["method"] {
	case "tools/call", "prompts/get":
		name(params, "name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		uri(params, "uri")
	case "completion/complete":
		if ref, ok := params["ref"].(map[string]any); ok {
			switch ref["type"] {
			case "ref/prompt":
				name(ref, "name")
			case "ref/resource":
				uri(ref, "uri")
			}
		}
	default:
		return b
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return b
	}
	return out
}

// answer strips the prefix from an answer body, line by line, so an SSE
// stream reaches the host event by event.
func (m nameMapper) answer(body io.ReadCloser) io.ReadCloser {
	r := strings.NewReplacer(`"`+m.server+`__`, `"`, `"mcp-guard://`+m.server+`/`, `"`)
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(body)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				if _, werr := io.WriteString(pw, r.Replace(line)); werr != nil {
					body.Close()
					return
				}
			}
			if err != nil {
				body.Close()
				if err == io.EOF {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}
