/**
 * The secrets the HTTP channels authenticate with, as in force: the configured one (config.json
 * or its environment variable) wins, else the one stored in `<home>/credentials/channels.json`
 * (shared/runtime/channel/secrets.ts), else none yet (the channel generates a random one at its
 * first start, so it never runs without one). Values never leave this module's callers' memory:
 * findings say which secret is weak and why, never what it is.
 */
import { existsSync, readFileSync } from "node:fs";
import { safeParseJson } from "../../../shared/contract/index.js";
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { channelSecretsPath } from "../../../shared/runtime/channel/secrets.js";

export interface ChannelSecret {
  /** e.g. "channels.web.token" or "channels.web.users[alice].token" */
  key: string;
  /** where the value comes from */
  source: "config" | "stored" | "generated at first start";
  value?: string;
}

/** channels.json as stored (unreadable or malformed: empty; its mode is a files check). */
export function storedChannelSecrets(config: LurkConfig): Record<string, Record<string, string>> {
  const path = channelSecretsPath(config);
  if (!existsSync(path)) return {};
  try {
    const parsed = safeParseJson(readFileSync(path), { maxBytes: 256 * 1024 });
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, Record<string, string>>) : {};
  } catch {
    return {};
  }
}

/** The secret `channels.<channel>.<field>` in force. */
export function channelSecret(config: LurkConfig, channel: string, field: string, stored = storedChannelSecrets(config)): ChannelSecret {
  const settings = (config.channels as Record<string, Record<string, unknown> | undefined>)[channel];
  const key = `channels.${channel}.${field}`;
  const configured = settings?.[field];
  if (typeof configured === "string" && configured) return { key, source: "config", value: configured };
  const value = stored[channel]?.[field];
  // the channel itself replaces a stored value shorter than 16 characters (secrets.ts)
  if (typeof value === "string" && value.length >= 16) return { key, source: "stored", value };
  return { key, source: "generated at first start" };
}
