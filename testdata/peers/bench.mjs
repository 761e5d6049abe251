// Measures tools/call latency and throughput through one MCP server or
// gateway with the official TypeScript SDK client, for scripts/bench:
//
//   node bench.mjs '{"command": "...", "args": [...], "env": {...}, "tool": "echo",
//                    "arguments": {"message": "hi"}, "calls": 2000, "concurrency": 1}'
//   node bench.mjs '{"url": "http://127.0.0.1:PORT/mcp", "pid": PID, "server": "SUBSTRING", ...}'
//
// With "command" it starts the process and speaks stdio to it; with "url" it
// speaks streamable HTTP to a process already running as "pid" (benchsuite.mjs
// starts it). It warms up with 50 calls, then makes "calls" calls with
// "concurrency" callers on one session (each call's arguments made unique
// with a counter, so no limit on identical calls applies), and prints one
// JSON line:
//
//   {"calls":2000,"concurrency":1,"p50_us":...,"p99_us":...,"calls_per_s":...,"peak_rss_kib":...,"cpu_us_per_call":...}
//
// With "sync" (benchsuite.mjs's HTTP_CLIENTS) it prints "ready" after the
// warm-up, waits for a line on stdin before the timed calls, and adds every
// call's latency to its line ("latencies_us"); benchsuite.mjs merges them.
//
// Both resource figures are of the gateway: the process started (or "pid")
// and its descendants, less the MCP servers it runs (descendants whose command
// line contains "server", and theirs). cpu_us_per_call is their CPU time
// (user + system, /proc/PID/stat) spent during the measured calls, divided by
// the calls: a figure other load on the machine moves far less than latency.
// peak_rss_kib is the sum of their VmHWM, read just before the session
// closes (procs.mjs). Both are null where /proc cannot be read (not Linux),
// or without a pid. client_cpu_us_per_call is this client's own CPU per call.
import { cpuTicks, peakRSS } from "./procs.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);
const transport = plan.url
  ? new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers: plan.headers ?? {} } })
  : new StdioClientTransport({
      command: plan.command,
      args: plan.args ?? [],
      env: { ...getDefaultEnvironment(), ...(plan.env ?? {}) },
      stderr: "ignore",
    });
const client = new Client({ name: "mcp-guard-bench", version: "1" });
await client.connect(transport);
const root = plan.url ? plan.pid : transport.pid;

let n = 0;
const call = () =>
  client.callTool({ name: plan.tool, arguments: { ...(plan.arguments ?? {}), message: `m${n++}` } }).then((r) => {
    if (r.isError) throw new Error(`call failed: ${JSON.stringify(r.content)}`);
  });

// A gateway may listen before its upstreams are up: the first call is
// retried for up to 60 s.
for (let i = 0; ; i++) {
  try {
    await call();
    break;
  } catch (e) {
    if (i >= 300) throw e;
    await new Promise((r) => setTimeout(r, 200));
  }
}
for (let i = 0; i < 50; i++) await call();

const cpu = () => (root ? cpuTicks(root, plan.server) : null);

const calls = plan.calls ?? 2000;
const concurrency = plan.concurrency ?? 1;
const lat = [];
let left = calls;
if (plan.sync) {
  // benchsuite.mjs runs several of these at once and times them itself.
  console.log("ready");
  await new Promise((resolve) => process.stdin.once("data", resolve));
}
const cpu0 = cpu();
const client0 = process.cpuUsage();
const start = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (left > 0) {
      left--;
      const t0 = process.hrtime.bigint();
      await call();
      lat.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  }),
);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const cpu1 = cpu();
const client1 = process.cpuUsage(client0);
const cpuPerCall = cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) * 10000) / calls);
lat.sort((a, b) => a - b);

const rss = root ? peakRSS(root, plan.server) : null;
await client.close();
console.log(
  JSON.stringify({
    calls,
    concurrency,
    p50_us: Math.round(lat[Math.floor(lat.length / 2)]),
    p99_us: Math.round(lat[Math.floor((lat.length * 99) / 100)]),
    calls_per_s: Math.round(calls / seconds),
    peak_rss_kib: rss,
    cpu_us_per_call: cpuPerCall,
    client_cpu_us_per_call: Math.round((client1.user + client1.system) / calls),
    ...(plan.sync ? { latencies_us: lat.map(Math.round) } : {}),
  }),
);
