// Measures tools/call latency and throughput through one stdio MCP server
// with the official TypeScript SDK client, for scripts/bench:
//
//   node bench.mjs '{"command": "...", "args": [...], "env": {...}, "tool": "echo",
//                    "arguments": {"message": "hi"}, "calls": 2000, "concurrency": 1}'
//
// It warms up with 50 calls, then makes "calls" calls with "concurrency"
// callers on one session (each call's arguments made unique with a counter,
// so no limit on identical calls applies), and prints one JSON line:
//
//   {"calls":2000,"concurrency":1,"p50_us":...,"p99_us":...,"calls_per_s":...,"peak_rss_kib":...}
//
// peak_rss_kib is the server process's VmHWM from /proc when it can be read
// (Linux), sampled just before the session closes; cpu_us_per_call is the
// CPU time (user + system) the server process itself spent per measured
// call, from /proc/PID/stat (its children, the upstreams, not included): a
// figure that other load on the machine moves far less than latency. Both
// are null elsewhere.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args ?? [],
  env: { ...getDefaultEnvironment(), ...(plan.env ?? {}) },
  stderr: "ignore",
});
const client = new Client({ name: "mcp-guard-bench", version: "1" });
await client.connect(transport);

let n = 0;
const call = () =>
  client.callTool({ name: plan.tool, arguments: { ...(plan.arguments ?? {}), message: `m${n++}` } }).then((r) => {
    if (r.isError) throw new Error(`call failed: ${JSON.stringify(r.content)}`);
  });

for (let i = 0; i < 50; i++) await call();

const calls = plan.calls ?? 2000;
const concurrency = plan.concurrency ?? 1;
const lat = [];
let left = calls;
const cpuTicks = () => {
  try {
    const stat = readFileSync(`/proc/${transport.pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks (100 a second)
  } catch {
    return null;
  }
};
const cpu0 = cpuTicks();
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
const cpu1 = cpuTicks();
const cpuPerCall = cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) * 10000) / calls);
lat.sort((a, b) => a - b);

let rss = null;
try {
  const status = readFileSync(`/proc/${transport.pid}/status`, "utf8");
  rss = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
} catch {}
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
  }),
);
