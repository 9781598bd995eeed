#!/usr/bin/env node
// `npx lurkbot ...`: runs the compiled CLI. The TypeScript is compiled by `npm install` (prepare).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const main = fileURLToPath(new URL("../../dist/services/cli/main.js", import.meta.url));
if (!existsSync(main)) {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  process.stderr.write(`lurkbot is not built yet: run \`npm install\` (or \`npm run build\`) in ${root}\n`);
  process.exit(1);
}
await import(main);
