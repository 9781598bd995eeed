/**
 * A HOOK.md (seeds 001 §8.5, OpenClaw's format): YAML frontmatter naming the hook's events and
 * requirements, then documentation. Read from the top level or from `metadata.lurkbot` /
 * `metadata.openclaw` / `metadata.moltbot` (JSON in YAML, as OpenClaw hooks write it):
 *   ---
 *   name: my-hook
 *   description: what it does
 *   metadata: {"lurkbot": {"emoji": "🪝", "events": ["command:new"], "requires": {"bins": ["git"], "env": ["X"]}, "os": ["linux"]}}
 *   ---
 * `context` (optional, e.g. ["previousMessages"]) asks the actor for extra event context (events.ts).
 */
import { oneLine, parseFrontmatter, yamlList, yamlMap, yamlString } from "../frontmatter.js";
import { hostRequirements, type HostRequirements } from "../host-requirements.js";
import { HOOK_NAME_RE } from "../config-hooks.js";
import { eventPatternProblem, HOOK_CONTEXT_KEYS, type HookContextKey } from "./events.js";

/** what the hook needs from the host (env: the environment or hooks.entries.<name>.env) */
export type HookRequires = HostRequirements;

export interface HookMeta {
  name: string;
  description: string;
  emoji?: string;
  events: string[];
  requires: HookRequires;
  /** extra event context the hook asks for (HOOK_CONTEXT_KEYS) */
  context: HookContextKey[];
}

const MAX_DESCRIPTION_CHARS = 400;
const MAX_EVENTS = 32;
const MAX_LIST_ITEMS = 100;

/** The name HOOK.md gives (frontmatter `name`), or undefined when it gives none: the folder's name then (parseHookMd). */
export function hookMdName(text: string): string | undefined {
  return yamlString(parseFrontmatter(text).data.name) || undefined;
}

/** The hook's metadata, or why the HOOK.md cannot be used. `dirName` is the name when none is given. */
export function parseHookMd(text: string, dirName: string): { ok: true; meta: HookMeta } | { ok: false; reason: string } {
  if (!/^\uFEFF?---\r?\n/.test(text)) return { ok: false, reason: "HOOK.md has no frontmatter (it must start with a --- line, then name, description and events, then ---)" };
  const { data } = parseFrontmatter(text);
  if (Object.keys(data).length === 0) return { ok: false, reason: "HOOK.md's frontmatter is empty or not closed by a --- line" };
  const meta = yamlMap(data.metadata);
  const nested = yamlMap(meta?.lurkbot) ?? yamlMap(meta?.openclaw) ?? yamlMap(meta?.moltbot);
  const name = yamlString(data.name) || dirName;
  if (!HOOK_NAME_RE.test(name)) return { ok: false, reason: `"${name}" is not a hook name (letters, digits, '.', '_', '-'; at most 64)` };
  if (name !== dirName) return { ok: false, reason: `its name "${name}" differs from its folder "${dirName}" (rename one so they match)` };
  const events = yamlList(data.events ?? nested?.events ?? meta?.events, MAX_LIST_ITEMS);
  if (events.length === 0) return { ok: false, reason: "HOOK.md names no events (add events: [command:new] or metadata.lurkbot.events)" };
  if (events.length > MAX_EVENTS) return { ok: false, reason: `HOOK.md names ${events.length} events; at most ${MAX_EVENTS}` };
  for (const e of events) {
    const problem = eventPatternProblem(e);
    if (problem) return { ok: false, reason: problem };
  }
  const context = yamlList(data.context ?? nested?.context ?? meta?.context, MAX_LIST_ITEMS);
  for (const c of context) {
    if (!(HOOK_CONTEXT_KEYS as readonly string[]).includes(c)) return { ok: false, reason: `HOOK.md asks for unknown context "${c}" (known: ${HOOK_CONTEXT_KEYS.join(", ")})` };
  }
  const req = yamlMap(data.requires) ?? yamlMap(nested?.requires) ?? yamlMap(meta?.requires) ?? {};
  const emoji = yamlString(data.emoji ?? nested?.emoji);
  return {
    ok: true,
    meta: {
      name, description: oneLine(yamlString(data.description), MAX_DESCRIPTION_CHARS), events: [...new Set(events)],
      requires: hostRequirements(req, data.os ?? nested?.os ?? req.os, MAX_LIST_ITEMS),
      context: [...new Set(context)] as HookContextKey[],
      ...(emoji ? { emoji: emoji.slice(0, 8) } : {}),
    },
  };
}

