// Runs bench.mjs against npm server-everything's echo many ways in one run,
// at concurrency 1 and 8, ROUNDS times (default 3), the targets interleaved
// within each round, and prints a Markdown report (scripts/bench writes it to
// docs/benchmarks.md):
//
//   stdio:  direct (the server itself), relay (a do-nothing byte copier),
//           guard (`mcp-guard serve`, allow rule, durable ledger, 3 upstreams),
//           guard-network (the same, the tool classified network)
//   HTTP:   guard-http (the same, `serve --http`), everything-http (the
//           server's own streamable HTTP), supergateway and mcp-proxy (npm
//           stdio → streamable HTTP bridges), and any EXTRA_TARGETS
//
//   [ROUNDS=3] [TARGETS=a,b] [HTTP_CALLS=N] [HTTP_CLIENTS=K] [EXTRA_TARGETS=FILE] node benchsuite.mjs BIN_DIR CALLS FSYNC_US
//
// BIN_DIR holds the mcp-guard and relay binaries; FSYNC_US is the disk's
// measured cost of one durable write, in microseconds. CALLS is the timed
// calls of each stdio row; HTTP rows make HTTP_CALLS (default CALLS / 4: the
// node HTTP servers and bridges here manage a few hundred calls a second).
// TARGETS picks targets by name (default all); a ratio whose targets did not
// run is left out. With BEFORE set to another mcp-guard binary (scripts/bench
// builds it from BEFORE=REV), that build runs as one more stdio target, with
// its own ledger, and the report gives mcp-guard's figures against it.
//
// EXTRA_TARGETS names a JSON file: an array of targets, each
//   {"name": "...", "command": "...", "args": [...], "env": {...},
//    "url": "http://127.0.0.1:{PORT}/mcp", "tool": "echo", "note": "..."}
// (without "url", a stdio target: the client starts command itself)
// where {PORT} (a free port), {EVERYTHING} (server-everything's index.js) and
// {WORK} (a scratch directory of the target's own) are replaced in args, env
// and url. Each is run as a peer (scripts/bench-go-peers uses it).
//
// An HTTP target's process is started afresh for each row (in its own process
// group, stopped after it) and the client speaks streamable HTTP to it. The
// CPU and RSS figures are the gateway's alone: its process and descendants,
// without the server-everything processes it runs (bench.mjs).
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir, cpus, totalmem } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { cpuTicks, gatewayPids, peakRSS } from "./procs.mjs";

const [binDir, callsArg, fsyncArg] = process.argv.slice(2);
const calls = Number(callsArg ?? 2000);
const httpCalls = Number(process.env.HTTP_CALLS ?? Math.max(100, Math.round(calls / 4)));
const here = dirname(fileURLToPath(import.meta.url));
const everything = join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const work = mkdtempSync(join(tmpdir(), "mcp-guard-bench-"));
const configFor = (name) => join(work, `${name}.toml`);
for (const name of ["guard", "guard-network", "guard-http", "before"]) writeFileSync(
  configFor(name),
  `[ledger]
path = ${JSON.stringify(join(work, name, "ledger.db"))}
[limits]
calls_per_session = 100000000
calls_per_tool_per_minute = 100000000
identical_call_repeats = 100000000
${["every", "every2", "every3"]
  .map((name) => `[[server]]
name = "${name}"
command = ["node", ${JSON.stringify(everything)}, "stdio"]
pass_env = ["PATH", "HOME"]
`)
  .join("")}[[rule]]
server = "every*"
tool = "echo"
class = "${name === "guard-network" ? "network" : "read"}"
action = "allow"
`,
);

// A target is stdio (command, args: bench.mjs starts it) or HTTP (http: the
// process to start, url: where it listens once started).
const bin = (name) => join(here, "node_modules", name);
const all = {
  direct: { path: "server-everything, stdio", command: "node", args: [everything, "stdio"], tool: "echo" },
  relay: { path: "do-nothing relay (testdata/relay), stdio", command: join(binDir, "relay"), args: ["node", everything, "stdio"], tool: "echo" },
  // The floor under mcp-guard: the relay, each call committed to
  // mcp-guard's ledger (the same statements and fsync) before it goes on,
  // by long-lived workers; nothing checked or decided.
  "relay-durable": { path: "durable relay (testdata/relay --ledger), stdio: the floor", command: join(binDir, "relay"), args: ["--ledger", join(work, "relay-durable", "ledger.db"), "node", everything, "stdio"], tool: "echo" },
  guard: { path: "mcp-guard serve, stdio", command: join(binDir, "mcp-guard"), args: ["serve", "--config", configFor("guard")], env: { HOME: work }, tool: "every__echo" },
  // The same call classified network: L7 and the default flows' stage
  // run on it too (a read skips both).
  "guard-network": { path: "mcp-guard serve, stdio, the tool classified network", command: join(binDir, "mcp-guard"), args: ["serve", "--config", configFor("guard-network")], env: { HOME: work }, tool: "every__echo" },
  "guard-http": {
    path: "mcp-guard serve --http",
    http: { command: join(binDir, "mcp-guard"), args: ["serve", "--config", configFor("guard-http"), "--http", "127.0.0.1:{PORT}"], env: { HOME: work } },
    url: "http://127.0.0.1:{PORT}/mcp",
    tool: "every__echo",
  },
  "everything-http": {
    path: "server-everything, its own streamable HTTP",
    http: { command: "node", args: [everything, "streamableHttp"], env: { PORT: "{PORT}" } },
    url: "http://127.0.0.1:{PORT}/mcp",
    tool: "echo",
  },
  supergateway: {
    path: "supergateway 4.0.0 --stateful",
    peer: true,
    http: { command: "node", args: [bin("supergateway/dist/index.js"), "--stdio", `node ${everything} stdio`, "--outputTransport", "streamableHttp", "--stateful", "--port", "{PORT}", "--logLevel", "none"] },
    url: "http://127.0.0.1:{PORT}/mcp",
    tool: "echo",
  },
  "mcp-proxy": {
    path: "mcp-proxy 6.7.19",
    peer: true,
    http: { command: "node", args: [bin("mcp-proxy/dist/bin/mcp-proxy.mjs"), "--port", "{PORT}", "--server", "stream", "--", "node", everything, "stdio"] },
    url: "http://127.0.0.1:{PORT}/mcp",
    tool: "echo",
  },
};
const before = process.env.BEFORE;
if (before) all.before = { path: `mcp-guard serve, stdio, ${process.env.BEFORE_REV ?? before}`, command: before, args: ["serve", "--config", configFor("before")], env: { HOME: work }, tool: "every__echo" };
if (process.env.EXTRA_TARGETS) {
  for (const t of JSON.parse(readFileSync(process.env.EXTRA_TARGETS, "utf8"))) {
    all[t.name] = t.url
      ? { path: t.path ?? t.name, peer: true, note: t.note, http: { command: t.command, args: t.args ?? [], env: t.env ?? {} }, url: t.url, tool: t.tool ?? "echo" }
      : { path: t.path ?? t.name, peer: true, note: t.note, command: t.command, args: t.args ?? [], env: t.env ?? {}, tool: t.tool ?? "echo" };
  }
}
const chosen = process.env.TARGETS ? process.env.TARGETS.split(",").map((s) => s.trim()).filter(Boolean) : Object.keys(all);
for (const n of chosen) if (!all[n]) throw new Error(`TARGETS: no target ${n} (known: ${Object.keys(all).join(", ")})`);
if (before && !chosen.includes("before")) chosen.push("before");
const targets = Object.fromEntries(chosen.map((n) => [n, all[n]]));

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const accepting = (port) =>
  new Promise((resolve) => {
    const c = createConnection({ port, host: "127.0.0.1" }, () => {
      c.destroy();
      resolve(true);
    });
    c.on("error", () => resolve(false));
  });
// A process's descendants, from /proc (a gateway may put its servers in
// process groups of their own, so stopping the group is not enough).
const tree = (root) => gatewayPids(root, null);
const signal = (pid, sig) => {
  try {
    process.kill(pid, sig);
  } catch {}
};
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const run = promisify(execFile);
// HTTP_CLIENTS > 1: the callers of an HTTP row with that many or more callers
// are split over that many client processes (a session each), started
// together after their warm-up, so one node client's CPU does not cap the
// gateway's throughput. The gateway's CPU and RSS are read here, around them.
// GO_CLIENT (scripts/bench builds testdata/benchclient) makes every HTTP row's
// client the Go SDK's, in one process: the TypeScript SDK's streamable HTTP
// client spends more CPU per call than the gateways it would measure.
const httpClients = Number(process.env.HTTP_CLIENTS ?? 1);
const goClient = process.env.GO_CLIENT;
const several = async (plan, k) => {
  const kids = Array.from({ length: k }, (_, i) => {
    const part = { ...plan, pid: null, sync: true, calls: Math.floor(plan.calls / k), concurrency: Math.floor(plan.concurrency / k) + (i < plan.concurrency % k ? 1 : 0) };
    const argv = goClient ? [goClient, [JSON.stringify(part)]] : ["node", [join(here, "bench.mjs"), JSON.stringify(part)]];
    const c = spawn(argv[0], argv[1], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    const ready = new Promise((resolve, reject) => {
      const check = () => (out.startsWith("ready\n") ? resolve() : null);
      c.stdout.on("data", check);
      c.on("exit", (code) => reject(new Error(`${argv[0]} exited ${code} before it was ready`)));
    });
    const done = new Promise((resolve, reject) => c.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${argv[0]} exited ${code}`)))));
    return { c, ready, done, out: () => out };
  });
  await Promise.all(kids.map((x) => x.ready));
  const cpu0 = cpuTicks(plan.pid, plan.server);
  const t0 = process.hrtime.bigint();
  for (const x of kids) x.c.stdin.end("go\n");
  await Promise.all(kids.map((x) => x.done));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = cpuTicks(plan.pid, plan.server);
  const parts = kids.map((x) => JSON.parse(x.out().trim().split("\n").pop()));
  const n = parts.reduce((a, p) => a + p.calls, 0);
  const lat = parts.flatMap((p) => p.latencies_us).sort((a, b) => a - b);
  return JSON.stringify({
    calls: n,
    concurrency: plan.concurrency,
    clients: k,
    p50_us: lat[Math.floor(lat.length / 2)],
    p99_us: lat[Math.floor((lat.length * 99) / 100)],
    calls_per_s: Math.round(n / seconds),
    peak_rss_kib: peakRSS(plan.pid, plan.server),
    cpu_us_per_call: cpu0 === null || cpu1 === null ? null : Math.round(((cpu1 - cpu0) * 10000) / n),
    client_cpu_us_per_call: Math.round(parts.reduce((a, p) => a + p.client_cpu_us_per_call * p.calls, 0) / n),
  });
};
let seq = 0;
const measure = async (name, t, concurrency) => {
  const n = t.http ? httpCalls : calls;
  const plan = { tool: t.tool, calls: n, concurrency, arguments: {}, server: everything };
  if (!t.http) {
    Object.assign(plan, { command: t.command, args: t.args, env: t.env });
    const { stdout } = await run("node", [join(here, "bench.mjs"), JSON.stringify(plan)], { encoding: "utf8", maxBuffer: 1 << 20 });
    return stdout;
  }
  const port = String(await freePort());
  const dir = join(work, `${name}-${++seq}`);
  mkdirSync(dir, { recursive: true });
  const fill = (s) => s.replaceAll("{PORT}", port).replaceAll("{EVERYTHING}", everything).replaceAll("{WORK}", dir);
  const log = join(dir, "log");
  const fd = openSync(log, "w");
  const child = spawn(fill(t.http.command), t.http.args.map(fill), {
    env: { ...process.env, ...Object.fromEntries(Object.entries(t.http.env ?? {}).map(([k, v]) => [k, fill(v)])) },
    stdio: ["ignore", fd, fd],
    detached: true,
  });
  let exited = false;
  child.on("exit", () => (exited = true));
  try {
    for (let i = 0; !(await accepting(Number(port))); i++) {
      if (exited || i > 600) throw new Error(`${name}: not listening on ${port} (${exited ? "exited" : "after 60s"}); its output:\n${readFileSync(log, "utf8").slice(-2000)}`);
      await sleep(100);
    }
    Object.assign(plan, { url: fill(t.url), pid: child.pid });
    try {
      if (goClient) return await several(plan, httpClients > 1 && concurrency >= httpClients ? httpClients : 1);
      if (httpClients > 1 && concurrency >= httpClients) return await several(plan, httpClients);
      const { stdout } = await run("node", [join(here, "bench.mjs"), JSON.stringify(plan)], { encoding: "utf8", maxBuffer: 1 << 20 });
      return stdout;
    } catch (e) {
      throw new Error(`${name} c=${concurrency}: ${e.message}\nits output:\n${readFileSync(log, "utf8").slice(-2000)}`);
    }
  } finally {
    const pids = tree(child.pid);
    signal(-child.pid, "SIGTERM");
    for (const p of pids) signal(p, "SIGTERM");
    for (let i = 0; i < 50 && pids.some(alive); i++) await sleep(100);
    for (const p of pids) if (alive(p)) signal(p, "SIGKILL");
  }
};

// The VM this runs on drifts by tens of percent from minute to minute, so the
// targets run interleaved, ROUNDS times each: each ratio is computed within a
// round, and the report gives the median round and every round's ratio.
const rounds = Number(process.env.ROUNDS ?? 3);
const runs = {}; // "name/concurrency" -> [result per round]
for (let round = 0; round < rounds; round++) {
  for (const concurrency of [1, 8]) {
    for (const [name, t] of Object.entries(targets)) {
      const out = await measure(name, t, concurrency);
      (runs[`${name}/${concurrency}`] ??= []).push(JSON.parse(out.trim().split("\n").pop()));
      process.stderr.write(`round ${round + 1} ${name} c=${concurrency}: ${out.trim()}\n`);
    }
  }
}

const median = (xs) => {
  const s = xs.filter((x) => x !== null && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const has = (...names) => names.every((n) => targets[n]);
const field = (k, f) => runs[k].map((x) => x[f]);
const med = (k, f) => median(field(k, f));
const highestRSS = (n) => Math.max(...[1, 8].flatMap((c) => field(`${n}/${c}`, "peak_rss_kib").map((x) => x ?? 0)));
const perRound = (f) => Array.from({ length: rounds }, (_, i) => f(i));
const ratio = (a, b, f) => perRound((i) => runs[a][i][f] / runs[b][i][f]);
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : "—");
const ms = (us) => (Number.isFinite(us) && us !== null ? (us / 1000).toFixed(2) : "—");
const mib = (kib) => (kib > 0 ? `${Math.round(kib / 1024)} MiB` : "—");
const each = (xs) => xs.map(fmt).join(", ");
const fsync = Number(fsyncArg);
const lines = [];
lines.push("# Benchmarks");
lines.push("");
const by = process.env.BENCH_SCRIPT ?? "scripts/bench";
lines.push(`Produced by \`${by}\`${by === "scripts/bench" ? " (this file is overwritten by each run)" : ""}. An allowed \`tools/call\` of npm`);
lines.push(`server-everything's \`echo\`, made with the official TypeScript SDK client over stdio${goClient ? " and the official Go SDK client over HTTP (`testdata/benchclient`: the TypeScript SDK's HTTP client spends more CPU per call than the gateways it would measure)" : ""}: over stdio directly, through a`);
lines.push("do-nothing stdio relay (`testdata/relay`), through the durable relay (`testdata/relay --ledger`: the relay, each call committed to mcp-guard's ledger before it is forwarded, nothing checked; the floor the headline subtracts), and through `mcp-guard serve` with an allow rule and its durable");
lines.push("ledger (every call committed with fsync before it is forwarded); over streamable HTTP to `mcp-guard serve");
lines.push("--http` (the same config), to server-everything's own HTTP server, and to the npm gateways that put a stdio");
lines.push("server on HTTP. All in one run, so the ratios compare like with like.");
lines.push("");
lines.push(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform}; node ${process.version}. ${calls} calls per stdio row, ${httpCalls} per HTTP row, after 50 warm-up calls${httpClients > 1 ? `; the 8 HTTP callers split over ${httpClients} client processes (a session each)` : ""}; ${rounds} rounds, the targets interleaved; each figure is the median of the rounds.`);
lines.push("CPU and RSS are the gateway's alone (its processes, not the server-everything processes it runs; for");
lines.push("direct and everything-http, the server's): CPU is user + system time over the timed calls divided by the");
lines.push("calls; RSS is the peak (VmHWM), the highest of the runs. mcp-guard runs 3 upstreams, the others 1.");
lines.push("");
// The headline (issue 40): what mcp-guard adds above the floor it cannot
// avoid while every call is committed durably before it is forwarded (the
// relay plus the ledger's own commit, measured alone in the same run), and
// what its HTTP host costs beside its stdio host.
const commitP50 = Number(process.env.COMMIT_P50_US), commitCPU = Number(process.env.COMMIT_CPU_US), commit8CPU = Number(process.env.COMMIT8_CPU_US);
const headline = [];
// The floor measured: the durable relay, in the same run, with the same
// idle waits as serve's (each pipe hop after the commit's fsync wakes an
// idle CPU, which the relay's own p50, measured hot, does not pay).
if (has("guard", "relay-durable")) {
  const xs = perRound((i) => (runs["guard/1"][i].p50_us - runs["relay-durable/1"][i].p50_us) / 1000);
  headline.push(`| 1 caller: mcp-guard p50 − floor p50 (the durable relay's) | ${fmt(median(xs))} ms | ${each(xs)} | ≤ 0.12 ms |`);
  const ys = perRound((i) => (runs["guard/8"][i].cpu_us_per_call - runs["relay-durable/8"][i].cpu_us_per_call) / 1000);
  headline.push(`| 8 callers: mcp-guard CPU per call − floor CPU (the durable relay's) | ${fmt(median(ys))} ms | ${each(ys)} | ≤ 0.06 ms |`);
}
// The floor summed from parts measured apart (the hot relay, the commit
// alone): lower than the durable relay's, kept for comparison with
// earlier runs.
if (commitP50 > 0 && has("guard", "relay")) {
  const xs = perRound((i) => (runs["guard/1"][i].p50_us - runs["relay/1"][i].p50_us - commitP50) / 1000);
  headline.push(`| 1 caller: mcp-guard p50 − summed floor p50 (relay p50 + the commit's p50 alone, ${commitP50} µs) | ${fmt(median(xs))} ms | ${each(xs)} | — |`);
}
if (commit8CPU > 0 && has("guard", "relay")) {
  const xs = perRound((i) => (runs["guard/8"][i].cpu_us_per_call - runs["relay/8"][i].cpu_us_per_call - commit8CPU) / 1000);
  headline.push(`| 8 callers: mcp-guard CPU per call − summed floor CPU (the relay's + the commit's alone, ${commit8CPU} µs) | ${fmt(median(xs))} ms | ${each(xs)} | — |`);
}
if (has("guard", "docker-mcp-gateway-stdio")) {
  const xs = ratio("guard/8", "docker-mcp-gateway-stdio/8", "calls_per_s");
  headline.push(`| 8 callers: mcp-guard calls/s / docker mcp-gateway's (long-lived, stdio) | ${fmt(median(xs))}× | ${each(xs)} | ≥ 1.2× |`);
}
if (has("guard-http", "guard")) {
  for (const c of [1, 8]) {
    const xs = ratio(`guard-http/${c}`, `guard/${c}`, "cpu_us_per_call");
    headline.push(`| ${c} caller${c > 1 ? "s" : ""}: mcp-guard's CPU per call, HTTP host / stdio host | ${fmt(median(xs))}× | ${each(xs)} | ≤ 1.3× |`);
  }
}
if (headline.length) {
  lines.push("What mcp-guard adds above the floor (median of the rounds; each round's figure beside it):");
  lines.push("");
  lines.push("| measure | median | each round | goal |");
  lines.push("|---|---|---|---|");
  lines.push(...headline);
  lines.push("");
}
lines.push("| path | c=1 p50 | c=8 calls/s | CPU ms/call c=1 / c=8 | RSS |");
lines.push("|---|---|---|---|---|");
for (const [n, t] of Object.entries(targets)) {
  lines.push(`| ${n}: ${t.path} | ${ms(med(`${n}/1`, "p50_us"))} ms | ${Math.round(med(`${n}/8`, "calls_per_s"))} | ${ms(med(`${n}/1`, "cpu_us_per_call"))} / ${ms(med(`${n}/8`, "cpu_us_per_call"))} | ${mib(highestRSS(n))} |`);
}
lines.push("");
lines.push("| target | callers | p50 µs | p99 µs | calls/s | gateway CPU µs/call | client CPU µs/call | peak RSS |");
lines.push("|---|---|---|---|---|---|---|---|");
for (const c of [1, 8]) for (const n of Object.keys(targets)) {
  const k = `${n}/${c}`;
  lines.push(`| ${n} | ${c} | ${Math.round(med(k, "p50_us"))} | ${Math.round(med(k, "p99_us"))} | ${Math.round(med(k, "calls_per_s"))} | ${Math.round(med(k, "cpu_us_per_call"))} | ${Math.round(med(k, "client_cpu_us_per_call"))} | ${mib(Math.max(...field(k, "peak_rss_kib").map((x) => x ?? 0)))} |`);
}
lines.push("");
lines.push("| measure | median of rounds | each round | target |");
lines.push("|---|---|---|---|");
const row = (what, xs, goal) => lines.push(`| ${what} | ${fmt(median(xs))}× | ${each(xs)} | ${goal} |`);
if (has("guard", "direct")) row("mcp-guard p50 / direct p50", ratio("guard/1", "direct/1", "p50_us"), "≤ 3×");
if (has("guard", "relay")) row("mcp-guard p50 / relay p50", ratio("guard/1", "relay/1", "p50_us"), "≤ 2×");
if (has("guard", "relay")) row("8 callers: mcp-guard calls/s / relay calls/s", ratio("guard/8", "relay/8", "calls_per_s"), "≥ 0.6×");
if (has("guard", "direct")) row("8 callers: mcp-guard calls/s / direct calls/s", ratio("guard/8", "direct/8", "calls_per_s"), "≥ 0.7×");
if (has("guard")) {
  for (const c of [1, 8]) {
    const xs = field(`guard/${c}`, "cpu_us_per_call").map((x) => (x === null ? NaN : x / 1000));
    lines.push(`| mcp-guard's own CPU per call, ${c} caller${c > 1 ? "s" : ""} | ${ms(med(`guard/${c}`, "cpu_us_per_call"))} ms | ${xs.map(fmt).join(", ")} | ≤ ${c === 1 ? "0.35" : "0.18"} ms |`);
  }
  lines.push(`| mcp-guard peak RSS (3 upstreams), highest of all runs | ${mib(highestRSS("guard"))} | | ≤ 30 MiB with 3 upstreams |`);
}
if (has("guard-network", "guard")) {
  row("a call classified network / classified read: p50, 1 caller", ratio("guard-network/1", "guard/1", "p50_us"), "—");
  row("a call classified network / classified read: CPU per call, 8 callers", ratio("guard-network/8", "guard/8", "cpu_us_per_call"), "—");
}
if (has("guard-http", "everything-http")) row("8 callers: mcp-guard HTTP calls/s / server-everything HTTP calls/s", ratio("guard-http/8", "everything-http/8", "calls_per_s"), "≥ 2×");
if (has("guard-http", "guard")) row("mcp-guard HTTP p50 / mcp-guard stdio p50", ratio("guard-http/1", "guard/1", "p50_us"), "—");
if (has("guard-http")) lines.push(`| mcp-guard HTTP peak RSS (3 upstreams), highest of all runs | ${mib(highestRSS("guard-http"))} | | ≤ 30 MiB with 3 upstreams |`);
if (before && has("guard")) {
  row(`mcp-guard p50 / before p50 (${process.env.BEFORE_REV ?? before})`, ratio("guard/1", "before/1", "p50_us"), "≤ 1× within noise");
  row("8 callers: mcp-guard calls/s / before calls/s", ratio("guard/8", "before/8", "calls_per_s"), "≥ 1× within noise");
  row("mcp-guard's own CPU per call / before's (1 caller)", ratio("guard/1", "before/1", "cpu_us_per_call"), "≤ 1× within noise");
}
if (fsync > 0) lines.push(`| one durable write (fsync) on this disk | ${fsync} µs | | — |`);
// The floor a durable call sets: the relay plus one call's commit, the
// ledger alone (scripts/bench passes BenchmarkCallRecordIdle's p50 and
// BenchmarkCallRecord's and BenchmarkCallRecord8's CPU).
if (commitP50 > 0 && has("relay")) {
  lines.push(`| one call's durable commit, the ledger alone, idle 500 µs between calls (\`BenchmarkCallRecordIdle\`), p50 | ${commitP50} µs | | — |`);
  lines.push(`| its CPU per call, 1 / 8 callers (\`BenchmarkCallRecord\`, \`BenchmarkCallRecord8\`) | ${commitCPU} / ${commit8CPU} µs | | — |`);
  row("floor, 1 caller: (relay p50 + the commit's p50) / relay p50", field("relay/1", "p50_us").map((r) => (r + commitP50) / r), "the p50 goal (≤ 2×) cannot be met below this");
  for (const [c, cpu] of [[1, commitCPU], [8, commit8CPU]]) {
    if (!(cpu > 0)) continue;
    const xs = field(`relay/${c}`, "cpu_us_per_call").map((r) => (r === null ? NaN : (r + cpu) / 1000));
    lines.push(`| floor, CPU per call, ${c} caller${c > 1 ? "s" : ""}: the relay's + the commit's | ${fmt(median(xs))} ms | ${xs.map(fmt).join(", ")} | the CPU goal (≤ ${c === 1 ? "0.35" : "0.18"} ms) cannot be met below this |`);
  }
}
const peers = Object.keys(targets).filter((n) => targets[n].peer);
// Each peer against mcp-guard on its own transport: serve over stdio for a
// stdio peer, serve --http for an HTTP one.
const base = (p) => (targets[p].http ? "guard-http" : "guard");
const comparable = peers.filter((p) => has(base(p)));
if (comparable.length) {
  lines.push("");
  lines.push("mcp-guard against each gateway, on the gateway's transport (median of the rounds' ratios; p50 and CPU:");
  lines.push("better for mcp-guard below 1×; calls/s: better above 1×; RSS: mcp-guard's peak with 3 upstreams over the");
  lines.push("peer's with 1):");
  lines.push("");
  lines.push("| peer | mcp-guard p50 / peer p50 (c=1) | mcp-guard calls/s / peer calls/s (c=8) | CPU per call, mcp-guard / peer (c=1 / c=8) | RSS, mcp-guard / peer |");
  lines.push("|---|---|---|---|---|");
  for (const p of comparable) {
    const g = base(p);
    const cpu1 = median(ratio(`${g}/1`, `${p}/1`, "cpu_us_per_call"));
    const cpu8 = median(ratio(`${g}/8`, `${p}/8`, "cpu_us_per_call"));
    lines.push(`| ${p} (${targets[p].path}) | ${fmt(median(ratio(`${g}/1`, `${p}/1`, "p50_us")))}× | ${fmt(median(ratio(`${g}/8`, `${p}/8`, "calls_per_s")))}× | ${fmt(cpu1)}× / ${fmt(cpu8)}× | ${fmt(highestRSS(g) / highestRSS(p))}× |`);
  }
  for (const p of comparable) if (targets[p].note) lines.push(`\n${p}: ${targets[p].note}`);
}
lines.push("");
console.log(lines.join("\n"));
