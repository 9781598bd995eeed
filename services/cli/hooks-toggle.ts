/**
 * `lurkbot hooks enable|disable NAME`: sets `hooks.entries.<name>.enabled` in config.json,
 * keeping everything else; the result is validated by the config schema before it is written,
 * atomically (mode 0600, shared/runtime/atomic-write.ts, as the onboard wizard writes it).
 */
import { existsSync, readFileSync } from "node:fs";
import { safeParseJson, LurkError } from "../../shared/contract/index.js";
import { configFilePath, defaultHome, parseConfig, type Env } from "../../shared/runtime/config.js";
import { CliError, EXIT } from "./errors.js";
import { writeFileAtomicSync } from "../../shared/runtime/atomic-write.js";

type Raw = Record<string, unknown>;

const isObject = (v: unknown): v is Raw => v !== null && typeof v === "object" && !Array.isArray(v);

/** Writes the flag; `changed` is false when config.json already said so. */
export function setHookEnabled(env: Env, name: string, enabled: boolean): { path: string; changed: boolean } {
  const home = defaultHome(env);
  const path = configFilePath(home);
  let raw: Raw = {};
  if (existsSync(path)) {
    let parsed: unknown;
    try {
      parsed = safeParseJson(readFileSync(path), { maxBytes: 4 * 1024 * 1024 });
    } catch (err) {
      throw new CliError(`cannot read ${path}: ${(err as Error).message}. Fix the file (it must be JSON), then run this again.`, EXIT.config);
    }
    if (!isObject(parsed)) throw new CliError(`${path} is not a JSON object. Fix the file, then run this again.`, EXIT.config);
    raw = parsed;
  }
  const hooks: Raw = isObject(raw.hooks) ? { ...raw.hooks } : {};
  const entries: Raw = isObject(hooks.entries) ? { ...hooks.entries } : {};
  const entry: Raw = isObject(entries[name]) ? { ...(entries[name] as Raw) } : {};
  if (entry.enabled === enabled) return { path, changed: false };
  entry.enabled = enabled;
  entries[name] = entry;
  hooks.entries = entries;
  const next = { ...raw, hooks };
  try {
    parseConfig(next, env, home, path);
  } catch (err) {
    const msg = LurkError.is(err) ? err.message : (err as Error).message;
    throw new CliError(`config.json would not be valid with that change, so nothing was written: ${msg}. Fix ${path} first.`, EXIT.config);
  }
  writeFileAtomicSync(path, `${JSON.stringify(next, null, 2)}\n`, 0o600);
  return { path, changed: true };
}
