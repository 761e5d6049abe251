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
// Both resource figures are of the gateway: the process started (or "pid")
// and its descendants, less the MCP servers it runs (descendants whose command
// line contains "server", and theirs). cpu_us_per_call is their CPU time
// (user + system, /proc/PID/stat) spent during the measured calls, divided by
// the calls: a figure other load on the machine moves far less than latency.
// peak_rss_kib is the sum of their VmHWM, read just before the session
// closes. Both are null where /proc cannot be read (not Linux).
import { readFileSync, readdirSync } from "node:fs";
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

for (let i = 0; i < 50; i++) await call();

// The gateway's processes: root and its descendants, less the servers (and
// their descendants). Read afresh each time: a gateway may start helpers.
const gateway = () => {
  const children = new Map(); // ppid -> [pid]
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(d));
    } catch {}
  }
  const isServer = (pid) => {
    if (!plan.server) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(plan.server);
    } catch {
      return false;
    }
  };
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const c of children.get(out[i]) ?? []) if (!isServer(c)) out.push(c);
  return out;
};
const cpuTicks = () => {
  try {
    let ticks = 0;
    for (const pid of gateway()) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        ticks += Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks (100 a second)
      } catch (e) {
        if (pid === root) throw e;
      }
    }
    return ticks;
  } catch {
    return null;
  }
};

const calls = plan.calls ?? 2000;
const concurrency = plan.concurrency ?? 1;
const lat = [];
let left = calls;
const cpu0 = cpuTicks();
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
const cpu1 = cpuTicks();
const client1 = process.cpuUsage(client0);
const cpuPerCall = cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) * 10000) / calls);
lat.sort((a, b) => a - b);

let rss = null;
try {
  rss = 0;
  for (const pid of gateway()) {
    try {
      rss += Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
    } catch (e) {
      if (pid === root) throw e;
    }
  }
} catch {
  rss = null;
}
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
  }),
);
