// Runs bench.mjs against npm server-everything's echo three ways in one run:
// directly, through a do-nothing stdio relay, and through `mcp-guard serve`
// with an allow rule and its durable ledger (serving three upstreams, so its
// peak RSS is measured as DESIGN.md states the target); at concurrency 1
// and 8. Prints
// a Markdown report (scripts/bench writes it to docs/benchmarks.md).
//
//   node benchsuite.mjs BIN_DIR CALLS FSYNC_US
//
// BIN_DIR holds the mcp-guard and relay binaries; FSYNC_US is the disk's
// measured cost of one durable write, in microseconds.
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
const config = join(work, "config.toml");
writeFileSync(
  config,
  `[ledger]
path = ${JSON.stringify(join(work, "state", "ledger.db"))}
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
  guard: { command: join(binDir, "mcp-guard"), args: ["serve", "--config", config], env: { HOME: work }, tool: "every__echo" },
};
const results = {};
for (const concurrency of [1, 8]) {
  for (const [name, t] of Object.entries(targets)) {
    const out = execFileSync("node", [join(here, "bench.mjs"), JSON.stringify({ ...t, calls, concurrency, arguments: {} })], { encoding: "utf8" });
    results[`${name}/${concurrency}`] = JSON.parse(out.trim().split("\n").pop());
    process.stderr.write(`${name} c=${concurrency}: ${out.trim()}\n`);
  }
}

const r = (k) => results[k];
const ratio = (a, b) => (a / b).toFixed(2);
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
lines.push(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform}; node ${process.version}. ${calls} calls per row after 50 warm-up calls.`);
lines.push("");
lines.push("| target | callers | p50 µs | p99 µs | calls/s |");
lines.push("|---|---|---|---|---|");
for (const c of [1, 8]) for (const n of ["direct", "relay", "guard"]) {
  const x = r(`${n}/${c}`);
  lines.push(`| ${n} | ${c} | ${x.p50_us} | ${x.p99_us} | ${x.calls_per_s} |`);
}
lines.push("");
lines.push("| measure | value | target (DESIGN.md) |");
lines.push("|---|---|---|");
lines.push(`| mcp-guard p50 / direct p50 | ${ratio(r("guard/1").p50_us, r("direct/1").p50_us)}× | ≤ 3× |`);
lines.push(`| mcp-guard p50 / relay p50 | ${ratio(r("guard/1").p50_us, r("relay/1").p50_us)}× | ≤ 2× |`);
lines.push(`| 8 callers: mcp-guard calls/s / direct calls/s | ${ratio(r("guard/8").calls_per_s, r("direct/8").calls_per_s)}× | ≥ 0.7× |`);
lines.push(`| mcp-guard peak RSS (3 upstreams) | ${Math.round((r("guard/8").peak_rss_kib ?? 0) / 1024)} MiB | ≤ 30 MiB with 3 upstreams |`);
if (fsync > 0) lines.push(`| one durable write (fsync) on this disk | ${fsync} µs | — |`);
lines.push("");
console.log(lines.join("\n"));
