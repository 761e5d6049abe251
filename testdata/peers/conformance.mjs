// Runs the official MCP conformance suite's CLI (npm
// @modelcontextprotocol/conformance, pinned in package.json) with the
// arguments given, for mcp-guard's end-to-end tests and by hand:
//
//   node conformance.mjs list --server
//   node conformance.mjs server --url http://127.0.0.1:PORT/mcp --scenario tools-list
//
// The suite's bundle imports fs.globSync, which Node 22 has and Node 20 does
// not; it uses it only in its tier-check command. On Node older than 22 a
// resolve hook hands the bundle an fs that adds a globSync which throws, so
// every other command runs unchanged.
import { register } from "node:module";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  const shim = [
    'export * from "node:fs";',
    'export { default } from "node:fs";',
    'export function globSync() { throw new Error("fs.globSync needs Node 22 (conformance tier-check only)"); }',
  ].join("\n");
  const hooks = `
    const shimURL = "data:text/javascript," + encodeURIComponent(${JSON.stringify(shim)});
    export async function resolve(specifier, context, next) {
      if ((specifier === "fs" || specifier === "node:fs") &&
          context.parentURL && context.parentURL.includes("/@modelcontextprotocol/conformance/")) {
        return { url: shimURL, shortCircuit: true };
      }
      return next(specifier, context);
    }`;
  register("data:text/javascript," + encodeURIComponent(hooks));
}

const require = createRequire(import.meta.url);
const pkg = require.resolve("@modelcontextprotocol/conformance/package.json");
await import(pathToFileURL(pkg.replace(/package\.json$/, "dist/index.js")).href);
