/**
 * Secrets `lurkbot onboard` stores for the launcher: `<home>/credentials/secrets.json` (mode 0600,
 * next to nats.json and channels.json), `{ "OPENAI_API_KEY": "…", "TELEGRAM_BOT_TOKEN": "…" }`.
 * They are environment variables kept on disk: the CLI adds each one to its environment unless
 * the environment already sets it (the shell wins), so the launcher hands it, like any secret of
 * the environment, only to the actor that needs it (ACTOR_SECRETS in actors.ts) and never writes
 * it into config.json, which every actor reads.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { LurkError, safeParseJson } from "../../shared/contract/index.js";
import { defaultHome, type Env } from "../../shared/runtime/config.js";
import { writeFileAtomicSync } from "../../shared/runtime/atomic-write.js";
import { checkCredentialsMode } from "../../shared/runtime/credentials.js";
import { ACTOR_SECRETS } from "./actors.js";

/** the names a secrets file may hold: the secrets some actor is granted */
export const STORABLE_SECRETS: ReadonlySet<string> = new Set(Object.values(ACTOR_SECRETS).flat());

/** A name a secrets file may hold: one of STORABLE_SECRETS, or an MCP server's `LURKBOT_MCP_<NAME>` (the mcp actor gets those). */
export function isStorableSecret(name: string): boolean {
  return STORABLE_SECRETS.has(name) || /^LURKBOT_MCP_[A-Z0-9_]{1,100}$/.test(name);
}

const fileSchema = z.record(z.string(), z.string().min(1).max(4096));

/** The file's path: always `<home>/credentials/secrets.json` (read before the config loads). */
export function storedSecretsPath(env: Env): string {
  return join(defaultHome(env), "credentials", "secrets.json");
}

/** The stored secrets ({} without a file); INSECURE_CONFIG for a file others can read or that is not one. */
export function readStoredSecrets(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  checkCredentialsMode(path);
  let parsed: unknown;
  try {
    parsed = safeParseJson(readFileSync(path), { maxBytes: 256 * 1024 });
  } catch (err) {
    throw new LurkError("INSECURE_CONFIG", `cannot read ${path}: ${(err as Error).message}. Fix it, or remove it and run \`npx lurkbot onboard\` again.`);
  }
  const result = fileSchema.safeParse(parsed);
  const unknown = result.success ? Object.keys(result.data).filter((k) => !isStorableSecret(k)) : [];
  if (!result.success || unknown.length) {
    throw new LurkError("INSECURE_CONFIG", `${path} is not a LurkBot secrets file${unknown.length ? ` (unknown names: ${unknown.join(", ")}; it holds ${[...STORABLE_SECRETS].join(", ")} and LURKBOT_MCP_*)` : ""}; fix it, or remove it and run \`npx lurkbot onboard\` again.`);
  }
  return result.data;
}

/** Writes the secrets atomically (writeFileAtomicSync: a new temporary file renamed over the old one), mode 0600. */
export function writeStoredSecrets(path: string, secrets: Record<string, string>): void {
  writeFileAtomicSync(path, JSON.stringify(secrets, null, 2) + "\n", 0o600);
}

/** The environment with the stored secrets it does not set itself. */
export function withStoredSecrets(env: Env): Env {
  const stored = readStoredSecrets(storedSecretsPath(env));
  const names = Object.keys(stored).filter((name) => !env[name]);
  if (names.length === 0) return env;
  const merged: Env = { ...env };
  for (const name of names) merged[name] = stored[name];
  return merged;
}
