/**
 * The values a server's `env` and `headers` hold: `${NAME}` is filled in from the actor's
 * environment (the launcher gives the mcp actor every `LURKBOT_MCP_*` variable, stored ones
 * included); a reference to a variable that is not set is a clear error naming it and how to
 * store it. Every resulting value is registered as a secret, so logs show it redacted.
 * Stdio children get only a minimal environment: PATH, HOME, LANG (the SDK adds LOGNAME, SHELL,
 * TERM, USER) and their configured `env`, never LurkBot's own variables.
 */
import { LurkError } from "../../shared/contract/index.js";
import { registerSecret } from "../../shared/runtime/logger.js";

const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function resolveValues(server: string, what: "env" | "headers", values: Readonly<Record<string, string>>, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, raw] of Object.entries(values)) {
    const value = raw.replace(REF, (_, name: string) => {
      const found = env[name];
      if (found === undefined || found === "") {
        throw new LurkError("CONFIG_INVALID", `mcp.servers.${server}.${what}.${key} refers to \${${name}}, which is not set in the mcp actor's environment: store it with \`npx lurkbot config set-secret ${name}\` (names starting LURKBOT_MCP_ reach the mcp actor), or export it before \`lurkbot start\``);
      }
      return found;
    });
    registerSecret(value);
    for (const part of value.split(/\s+/)) registerSecret(part);
    out[key] = value;
  }
  return out;
}

/** The environment of a stdio server: the minimal one and its configured values. */
export function childEnv(configured: Record<string, string>, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const base: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "LANG"]) {
    const value = env[name];
    if (value) base[name] = value;
  }
  return { ...base, ...configured };
}
