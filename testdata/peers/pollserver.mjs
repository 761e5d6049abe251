// An MCP server over streamable HTTP, built on the official TypeScript SDK,
// that closes a call's answer stream before the answer once it has given an
// event ID (2025-11-25 "SSE polling", SEP-1699): a client resumes the stream
// with GET and Last-Event-ID after the server's retry time and gets the
// answer there. For mcp-guard's end-to-end tests:
//
//   PORT=NNNN node pollserver.mjs      (serves http://127.0.0.1:PORT/mcp)
//
// Its one tool, long_task, logs "started", closes the answer stream, and
// answers "long task done" 300 ms later.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sessions = new Map();
const eventStore = new InMemoryEventStore();

function newServer() {
  const server = new McpServer({ name: "poll", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.tool("long_task", "Answers after closing its answer stream once.", {}, async (_args, extra) => {
    await server.sendLoggingMessage({ level: "info", data: "started" }, extra.sessionId);
    await sleep(50);
    extra.closeSSEStream?.();
    await sleep(300);
    return { content: [{ type: "text", text: "long task done" }] };
  });
  return server;
}

createServer(async (req, res) => {
  let body;
  if (req.method === "POST") {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400).end();
      return;
    }
  }
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid || req.method !== "POST" || !isInitializeRequest(body)) {
      res.writeHead(sid ? 404 : 400).end();
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore,
      retryInterval: 200,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}).listen(Number(process.env.PORT), "127.0.0.1");
