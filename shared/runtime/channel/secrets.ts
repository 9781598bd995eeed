/**
 * Channel secrets a channel can generate itself (the openai-http bearer token, the webhook
 * signing secret): the config (file or environment) wins; otherwise the value is read from,
 * or generated into, `<home>/credentials/channels.json` (mode 0600, replaced atomically) by `lurkbot setup` or the
 * channel's first start. `{ "<channel>": { "<field>": "<value>" } }`.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { LurkError, safeParseJson } from "../../contract/index.js";
import { writeFileAtomicSync } from "../atomic-write.js";
import type { LurkConfig } from "../config.js";
import { checkCredentialsMode } from "../credentials.js";

const fileSchema = z.record(z.string(), z.record(z.string(), z.string()));

export const channelSecretsPath = (config: LurkConfig) => join(dirname(config.nats.credentialsFile), "channels.json");

function readFile(path: string): z.infer<typeof fileSchema> {
  if (!existsSync(path)) return {};
  checkCredentialsMode(path);
  const parsed = fileSchema.safeParse(safeParseJson(readFileSync(path), { maxBytes: 256 * 1024 }));
  if (!parsed.success) throw new LurkError("INSECURE_CONFIG", `${path} is not a channel secrets file; remove it and run \`npx lurkbot setup\`.`);
  return parsed.data;
}

/** The configured value, else the stored one, else a new random one (stored). */
export function ensureChannelSecret(config: LurkConfig, channel: string, field: string, configured: string | undefined): { value: string; source: "config" | "file" | "generated"; path: string } {
  const path = channelSecretsPath(config);
  if (configured) return { value: configured, source: "config", path };
  const data = readFile(path);
  const stored = data[channel]?.[field];
  if (stored && stored.length >= 16) return { value: stored, source: "file", path };
  const value = `lb-${randomBytes(24).toString("base64url")}`;
  data[channel] = { ...(data[channel] ?? {}), [field]: value };
  writeFileAtomicSync(path, JSON.stringify(data, null, 2) + "\n", 0o600);
  return { value, source: "generated", path };
}
