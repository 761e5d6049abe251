// A scripted MCP host built on the official TypeScript SDK, for mcp-guard's
// end-to-end tests. It starts one stdio server, runs a plan's steps in order
// and prints one JSON line per step to stdout:
//
//   node client.mjs plan.json     (or the plan on stdin)
//
// The plan:
//
//   {
//     "command": "/path/to/mcp-guard", "args": ["serve", "--config", "c.toml"],
//     "env": {"HOME": "/tmp/x"},        // added to the SDK's default environment
//     "timeoutMs": 60000,               // default request timeout
//     "capabilities": {                 // optional: what the client declares, with canned answers
//       "sampling": {"text": "a reply", "model": "ts-canned"},       // answers sampling/createMessage
//       "elicitation": {"action": "accept", "content": {"name": "Ada"}}, // answers elicitation/create (form and URL mode)
//       "roots": [{"uri": "file:///home/me/secret", "name": "mine"}] // answers roots/list
//     },
//     "steps": [
//       {"id": "tools", "op": "listTools"},
//       {"id": "echo", "op": "callTool", "name": "every__echo", "arguments": {"message": "hi"},
//        "timeoutMs": 30000, "expect": "ok"}
//     ]
//   }
//
// Lines printed:
//
//   {"id":"initialize","protocolVersion":"2025-11-25","serverInfo":{...}}
//   {"id":"tools","tools":["every__echo", ...]}
//   {"id":"echo","isError":false,"content":[...],"structuredContent":...}
//   {"id":"echo","progress":1,"total":null,"message":"..."}        (progress while a call runs)
//   {"id":"x","error":{"code":-32602,"message":"..."}}             (only with "expect": "error")
//   {"id":"echo","served":"sampling/createMessage","params":{...}} (a request the server made of
//                                                                   the client, answered from "capabilities",
//                                                                   during step "echo"; "" before any step)
//
// "expect" is "ok" (a result, not isError), "isError" (a result with
// isError) or "error" (a JSON-RPC error). A JSON-RPC error that was not
// expected, a result that does not match "expect", a bad plan or a broken
// connection ends the script with exit 1 and one line on stderr saying which
// step failed and why. Every output line is written before it exits.
//
// Without "capabilities" the client declares none (no sampling, roots or
// elicitation).

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

function fail(msg) {
  process.stderr.write(`client.mjs: ${msg}\n`);
  process.exit(1);
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

let plan;
try {
  plan = JSON.parse(readFileSync(process.argv[2] ?? 0, "utf8"));
} catch (err) {
  fail(`reading the plan: ${err.message}`);
}
if (typeof plan.command !== "string" || !Array.isArray(plan.steps)) {
  fail('the plan needs "command" (a string) and "steps" (a list)');
}

const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args ?? [],
  env: plan.env,
  cwd: plan.cwd,
  stderr: "inherit",
});
// The client reports the negotiated version to transports that want it.
let protocolVersion;
transport.setProtocolVersion = (v) => {
  protocolVersion = v;
};

// The step in flight, for the lines of requests served during it.
let current = "";
const canned = plan.capabilities ?? {};
const capabilities = {};
if (canned.sampling) capabilities.sampling = {};
if (canned.elicitation) capabilities.elicitation = { form: {}, url: {} };
if (canned.roots) capabilities.roots = { listChanged: false };
const client = new Client({ name: "mcp-guard-ts-peer", version: "1" }, { capabilities });
if (canned.sampling) {
  client.setRequestHandler(CreateMessageRequestSchema, (req) => {
    emit({ id: current, served: req.method, params: req.params });
    return {
      model: canned.sampling.model ?? "ts-canned",
      role: "assistant",
      content: { type: "text", text: canned.sampling.text ?? "" },
      stopReason: "endTurn",
    };
  });
}
if (canned.elicitation) {
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    emit({ id: current, served: req.method, params: req.params });
    const { action = "decline", content } = canned.elicitation;
    return content === undefined ? { action } : { action, content };
  });
}
if (canned.roots) {
  client.setRequestHandler(ListRootsRequestSchema, (req) => {
    emit({ id: current, served: req.method, params: req.params ?? null });
    return { roots: canned.roots };
  });
}
try {
  await client.connect(transport, { timeout: plan.timeoutMs ?? 60000 });
} catch (err) {
  fail(`initialize: ${err.message}`);
}
emit({ id: "initialize", protocolVersion, serverInfo: client.getServerVersion() ?? null });

for (const [i, step] of plan.steps.entries()) {
  const id = step.id ?? String(i);
  const what = `step ${JSON.stringify(id)} (${step.op}${step.name ? " " + step.name : ""})`;
  current = id;
  const options = {
    timeout: step.timeoutMs ?? plan.timeoutMs ?? 60000,
    onprogress: (p) => emit({ id, progress: p.progress, total: p.total ?? null, message: p.message ?? null }),
  };
  let out;
  try {
    switch (step.op) {
      case "listTools": {
        const tools = [];
        let cursor;
        do {
          const page = await client.listTools(cursor ? { cursor } : {}, options);
          tools.push(...page.tools.map((t) => t.name));
          cursor = page.nextCursor;
        } while (cursor);
        out = { id, tools };
        break;
      }
      case "callTool": {
        const r = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, options);
        out = { id, isError: r.isError === true, content: r.content, structuredContent: r.structuredContent ?? null };
        break;
      }
      default:
        fail(`${what}: unknown op (want listTools or callTool)`);
    }
  } catch (err) {
    if (step.expect !== "error") {
      fail(`${what}: ${err.message}`);
    }
    emit({ id, error: { code: err.code ?? null, message: err.message } });
    continue;
  }
  emit(out);
  const got = out.isError ? "isError" : "ok";
  if (step.expect && step.expect !== got) {
    fail(`${what}: expected ${step.expect}, got ${got}: ${JSON.stringify(out.content)}`);
  }
}

await client.close();
