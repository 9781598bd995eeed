/**
 * A HOOK.md (seeds 001 §8.5, OpenClaw's format): YAML frontmatter naming the hook's events and
 * requirements, then documentation. Read from the top level or from `metadata.lurkbot` /
 * `metadata.openclaw` / `metadata.moltbot` (JSON in YAML, as OpenClaw hooks write it):
 *   ---
 *   name: my-hook
 *   description: what it does
 *   metadata: {"lurkbot": {"emoji": "🪝", "events": ["command:new"], "requires": {"bins": ["git"], "env": ["X"]}, "os": ["linux"]}}
 *   ---
 */
import { parseFrontmatter, type YamlMap, type YamlValue } from "../frontmatter.js";
import { HOOK_NAME_RE } from "../config-hooks.js";
import { eventPatternProblem } from "./events.js";

export interface HookRequires {
  /** every one must be on PATH */
  bins: string[];
  /** at least one must be on PATH */
  anyBins: string[];
  /** each must be set (the environment or hooks.entries.<name>.env) */
  env: string[];
  /** process.platform values; empty: any */
  os: string[];
}

export interface HookMeta {
  name: string;
  description: string;
  emoji?: string;
  events: string[];
  requires: HookRequires;
}

const MAX_DESCRIPTION_CHARS = 400;
const MAX_EVENTS = 32;

/** The hook's metadata, or why the HOOK.md cannot be used. `dirName` is the name when none is given. */
export function parseHookMd(text: string, dirName: string): { ok: true; meta: HookMeta } | { ok: false; reason: string } {
  if (!/^\uFEFF?---\r?\n/.test(text)) return { ok: false, reason: "HOOK.md has no frontmatter (it must start with a --- line, then name, description and events, then ---)" };
  const { data } = parseFrontmatter(text);
  if (Object.keys(data).length === 0) return { ok: false, reason: "HOOK.md's frontmatter is empty or not closed by a --- line" };
  const meta = asMap(data.metadata);
  const nested = asMap(meta?.lurkbot) ?? asMap(meta?.openclaw) ?? asMap(meta?.moltbot);
  const name = str(data.name) || dirName;
  if (!HOOK_NAME_RE.test(name)) return { ok: false, reason: `"${name}" is not a hook name (letters, digits, '.', '_', '-'; at most 64)` };
  if (name !== dirName) return { ok: false, reason: `its name "${name}" differs from its folder "${dirName}" (rename one so they match)` };
  const events = list(data.events ?? nested?.events ?? meta?.events);
  if (events.length === 0) return { ok: false, reason: "HOOK.md names no events (add events: [command:new] or metadata.lurkbot.events)" };
  if (events.length > MAX_EVENTS) return { ok: false, reason: `HOOK.md names ${events.length} events; at most ${MAX_EVENTS}` };
  for (const e of events) {
    const problem = eventPatternProblem(e);
    if (problem) return { ok: false, reason: problem };
  }
  const req = asMap(data.requires) ?? asMap(nested?.requires) ?? asMap(meta?.requires) ?? {};
  const emoji = str(data.emoji ?? nested?.emoji);
  return {
    ok: true,
    meta: {
      name, description: oneLine(str(data.description)), events: [...new Set(events)],
      requires: { bins: list(req.bins), anyBins: list(req.anyBins), env: list(req.env), os: list(data.os ?? nested?.os ?? req.os) },
      ...(emoji ? { emoji: emoji.slice(0, 8) } : {}),
    },
  };
}

function str(v: YamlValue | undefined): string {
  return typeof v === "string" ? v.trim() : typeof v === "number" || typeof v === "boolean" ? String(v) : "";
}

function oneLine(text: string): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > MAX_DESCRIPTION_CHARS ? `${t.slice(0, MAX_DESCRIPTION_CHARS - 3)}...` : t;
}

function asMap(v: YamlValue | undefined): YamlMap | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
}

/** a list of strings from `[a, b]`, `- a` lines or a single `a` */
function list(v: YamlValue | undefined): string[] {
  if (v === undefined || v === null) return [];
  const items = Array.isArray(v) ? v : [v];
  return items.map((x) => str(x)).filter((x) => x !== "").slice(0, 100);
}
