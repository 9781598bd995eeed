/**
 * The `hooks` section of config.json, read on its own (the hooks actor's reload): the rest of the
 * file may be mid-edit or invalid without keeping a hooks change from applying, and environment
 * overrides never touch this section. A missing file or section is the defaults. Never throws:
 * an unreadable file or an invalid section is `{ ok: false, reason }` and the caller keeps what
 * it had.
 */
import { readFileSync } from "node:fs";
import { safeParseJson } from "../../contract/index.js";
import { configFilePath } from "../config.js";
import { hooksConfigSchema, type HooksConfig } from "../config-hooks.js";

const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

export function readHooksConfig(home: string): { ok: true; config: HooksConfig } | { ok: false; reason: string } {
  const path = configFilePath(home);
  let raw: unknown;
  try {
    raw = safeParseJson(readFileSync(path), { maxBytes: MAX_CONFIG_BYTES });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") raw = {};
    else return { ok: false, reason: `cannot read ${path}: ${(err as Error).message}` };
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { ok: false, reason: `${path}: the top level must be a JSON object` };
  const parsed = hooksConfigSchema.safeParse((raw as Record<string, unknown>).hooks);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `hooks.${i.path.join(".")}: ${i.message}`).join("; ");
    return { ok: false, reason: `${path}: ${issues}` };
  }
  return { ok: true, config: parsed.data };
}
