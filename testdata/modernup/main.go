// Command modernup runs testdata/modernserver, a go-sdk MCP server, over
// stdio for mcp-guard's end-to-end tests of protocol 2026-07-28 upstream.
// Every line it receives is appended to --record; --more adds the
// server's extra tools, prompt and resource. With --http ADDR it serves
// stateless streamable HTTP instead, with two more tools (httpserve.go).
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/testdata/modernserver"
)

func main() {
	record := flag.String("record", "", "append every line received to this file")
	more := flag.Bool("more", false, "add the tools weather, fail and boom")
	addr := flag.String("http", "", "serve streamable HTTP (stateless, as 2026-07-28 needs) on this address instead of stdio; each request body, and its Mcp-* headers, are appended to --record as one line")
	endListen := flag.Bool("end-listen", false, "with --http: answer every subscriptions/listen at once, once acknowledged")
	flag.Parse()
	var in io.ReadCloser = os.Stdin
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		in = modernserver.Recorded(os.Stdin, f)
	}
	srv := modernserver.New(*more)
	if *addr != "" {
		serveHTTP(srv, *addr, *record, *endListen)
		return
	}
	if err := srv.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: os.Stdout}); err != nil {
		log.Fatal(err)
	}
}
