// Runs bench.mjs against npm server-everything's echo three ways in one run:
// directly, through a do-nothing stdio relay, and through `mcp-guard serve`
// with an allow rule and its durable ledger (serving three upstreams, so its
// peak RSS is measured as DESIGN.md states the target); at concurrency 1
// and 8; ROUNDS times (default 3), interleaved. Prints a Markdown report
// (scripts/bench writes it to docs/benchmarks.md).
//
//   [ROUNDS=3] node benchsuite.mjs BIN_DIR CALLS FSYNC_US
//
// BIN_DIR holds the mcp-guard and relay binaries; FSYNC_US is the disk's
// measured cost of one durable write, in microseconds. With BEFORE set to
// another mcp-guard binary (scripts/bench builds it from BEFORE=REV), that
// build runs as a fourth target, interleaved, with its own ledger, and the
// report gives mcp-guard's p50 and throughput against it.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir, cpus, totalmem } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const [binDir, callsArg, fsyncArg] = process.argv.slice(2);
const calls = Number(callsArg ?? 2000);
const here = dirname(fileURLToPath(import.meta.url));
const everything = join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const work = mkdtempSync(join(tmpdir(), "mcp-guard-bench-"));
const configFor = (name) => join(work, `${name}.toml`);
for (const name of ["guard", "before"]) writeFileSync(
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
class = "read"
action = "allow"
`,
);

const targets = {
  direct: { command: "node", args: [everything, "stdio"], tool: "echo" },
  relay: { command: join(binDir, "relay"), args: ["node", everything, "stdio"], tool: "echo" },
  guard: { command: join(binDir, "mcp-guard"), args: ["serve", "--config", configFor("guard")], env: { HOME: work }, tool: "every__echo" },
};
const before = process.env.BEFORE;
if (before) targets.before = { command: before, args: ["serve", "--config", configFor("before")], env: { HOME: work }, tool: "every__echo" };
// The VM this runs on drifts by tens of percent from minute to minute, so the
// targets run interleaved, ROUNDS times each (direct, relay, mcp-guard, then
// again): each ratio is computed within a round, and the report gives the
// median round and every round's ratio.
const rounds = Number(process.env.ROUNDS ?? 3);
const runs = {}; // "name/concurrency" -> [result per round]
for (let round = 0; round < rounds; round++) {
  for (const concurrency of [1, 8]) {
    for (const [name, t] of Object.entries(targets)) {
      const out = execFileSync("node", [join(here, "bench.mjs"), JSON.stringify({ ...t, calls, concurrency, arguments: {} })], { encoding: "utf8" });
      (runs[`${name}/${concurrency}`] ??= []).push(JSON.parse(out.trim().split("\n").pop()));
      process.stderr.write(`round ${round + 1} ${name} c=${concurrency}: ${out.trim()}\n`);
    }
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const field = (k, f) => runs[k].map((x) => x[f]);
const perRound = (f) => runs["guard/1"].map((_, i) => f(i));
const ratios = {
  direct: perRound((i) => runs["guard/1"][i].p50_us / runs["direct/1"][i].p50_us),
  relay: perRound((i) => runs["guard/1"][i].p50_us / runs["relay/1"][i].p50_us),
  tput: perRound((i) => runs["guard/8"][i].calls_per_s / runs["direct/8"][i].calls_per_s),
};
if (before) {
  ratios.before = perRound((i) => runs["guard/1"][i].p50_us / runs["before/1"][i].p50_us);
  ratios.beforeTput = perRound((i) => runs["guard/8"][i].calls_per_s / runs["before/8"][i].calls_per_s);
  ratios.beforeCPU = perRound((i) => runs["guard/1"][i].cpu_us_per_call / runs["before/1"][i].cpu_us_per_call);
}
const fmt = (x) => x.toFixed(2);
const each = (xs) => xs.map(fmt).join(", ");
const fsync = Number(fsyncArg);
const lines = [];
lines.push("# Benchmarks");
lines.push("");
lines.push("Produced by `scripts/bench` (this file is overwritten by each run). An allowed `tools/call` of npm");
lines.push("server-everything's `echo`, made with the official TypeScript SDK client over stdio: directly, through a");
lines.push("do-nothing stdio relay (`testdata/relay`), and through `mcp-guard serve` with an allow rule and its durable");
lines.push("ledger (every call committed with fsync before it is forwarded). All in one run, so the ratios compare like");
lines.push("with like.");
lines.push("");
lines.push(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform}; node ${process.version}. ${calls} calls per row after 50 warm-up calls; ${rounds} rounds, the targets interleaved; each figure is the median of the rounds.`);
lines.push("");
lines.push("| target | callers | p50 µs | p99 µs | calls/s | server CPU µs/call |");
lines.push("|---|---|---|---|---|---|");
for (const c of [1, 8]) for (const n of Object.keys(targets)) {
  const k = `${n}/${c}`;
  lines.push(`| ${n} | ${c} | ${Math.round(median(field(k, "p50_us")))} | ${Math.round(median(field(k, "p99_us")))} | ${Math.round(median(field(k, "calls_per_s")))} | ${Math.round(median(field(k, "cpu_us_per_call")))} |`);
}
lines.push("");
lines.push("| measure | median of rounds | each round | target (DESIGN.md) |");
lines.push("|---|---|---|---|");
lines.push(`| mcp-guard p50 / direct p50 | ${fmt(median(ratios.direct))}× | ${each(ratios.direct)} | ≤ 3× |`);
lines.push(`| mcp-guard p50 / relay p50 | ${fmt(median(ratios.relay))}× | ${each(ratios.relay)} | ≤ 2× |`);
lines.push(`| 8 callers: mcp-guard calls/s / direct calls/s | ${fmt(median(ratios.tput))}× | ${each(ratios.tput)} | ≥ 0.7× |`);
const rss = Math.max(...field("guard/8", "peak_rss_kib").map((x) => x ?? 0), ...field("guard/1", "peak_rss_kib").map((x) => x ?? 0));
lines.push(`| mcp-guard peak RSS (3 upstreams), highest of all runs | ${Math.round(rss / 1024)} MiB | | ≤ 30 MiB with 3 upstreams |`);
if (before) {
  lines.push(`| mcp-guard p50 / before p50 (${process.env.BEFORE_REV ?? before}) | ${fmt(median(ratios.before))}× | ${each(ratios.before)} | ≤ 1× within noise |`);
  lines.push(`| 8 callers: mcp-guard calls/s / before calls/s | ${fmt(median(ratios.beforeTput))}× | ${each(ratios.beforeTput)} | ≥ 1× within noise |`);
  lines.push(`| mcp-guard's own CPU per call / before's (1 caller) | ${fmt(median(ratios.beforeCPU))}× | ${each(ratios.beforeCPU)} | ≤ 1× within noise |`);
}
if (fsync > 0) lines.push(`| one durable write (fsync) on this disk | ${fsync} µs | | — |`);
lines.push("");
console.log(lines.join("\n"));
