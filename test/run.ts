/**
 * `npm test` runs this after `tsc`: every compiled `*.test.js` under dist/test through node's
 * test runner (spec reporter). Arguments filter test files by substring: `npm test -- runtime`.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));
const filters = process.argv.slice(2);

function find(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return find(path);
    return entry.name.endsWith(".test.js") ? [path] : [];
  });
}

const files = find(root)
  .filter((f) => filters.length === 0 || filters.some((x) => relative(root, f).includes(x)))
  .sort();
if (files.length === 0) {
  process.stderr.write(`no test files match ${filters.join(" ")}\n`);
  process.exit(1);
}
const result = spawnSync(process.execPath, ["--test", "--test-reporter=spec", "--test-concurrency=2", "--test-timeout=180000", ...files], { stdio: "inherit" });
process.exit(result.status ?? 1);
