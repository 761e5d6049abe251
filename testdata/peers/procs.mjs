// The process figures bench.mjs and benchsuite.mjs report, read from /proc
// (Linux; null elsewhere): a gateway's CPU time and peak RSS, the gateway
// being a process and its descendants less the MCP servers it runs
// (descendants whose command line contains `server`, and theirs).
import { readFileSync, readdirSync } from "node:fs";

// The pids of root's tree, less the servers. Read afresh each time: a gateway
// may start helpers.
export const gatewayPids = (root, server) => {
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
    if (!server) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(server);
    } catch {
      return false;
    }
  };
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const c of children.get(out[i]) ?? []) if (!isServer(c)) out.push(c);
  return out;
};

// Sums f(pid) over the gateway's processes; null when root cannot be read.
const sum = (root, server, f) => {
  try {
    let total = 0;
    for (const pid of gatewayPids(root, server)) {
      try {
        total += f(pid);
      } catch (e) {
        if (pid === root) throw e;
      }
    }
    return total;
  } catch {
    return null;
  }
};

// User + system CPU time, in clock ticks (100 a second).
export const cpuTicks = (root, server) =>
  sum(root, server, (pid) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]);
  });

// Peak resident memory (VmHWM), KiB.
export const peakRSS = (root, server) =>
  sum(root, server, (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]));
