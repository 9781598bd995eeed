/**
 * Chat commands and inline directives (seeds 001 §5.3), parsed from a message's text (pure).
 *
 * Commands are the whole message: /new and /reset (text after them becomes the first message
 * of the fresh session), /stop (/abort), /status, /help (/commands), /compact [instructions],
 * /approve ID, /deny ID, /subagents [list|stop [KEY|RUNID|all]], /pair [list|approve CODE|deny CODE],
 * /usage [days], /sessions.
 * Telegram's `/cmd@botname` works.
 *
 * Directives may stand anywhere at a word start: /think (/t), /verbose (/v), /reasoning, /tts,
 * /model, /queue, as `/think:high`, `/t medium` or bare `/think` (the seeds' default level;
 * bare `/tts` and `/tts status` only show the setting).
 * A message made only of directives changes the session's settings; with other text they
 * apply to that one run and the rest of the text is the message.
 */
import type { z } from "zod";
import type { queueDropPolicySchema, queueModeSchema, reasoningLevelSchema, thinkLevelSchema, ttsAutoSchema, verboseLevelSchema } from "../../shared/contract/index.js";

export type ThinkLevel = z.infer<typeof thinkLevelSchema>;
export type VerboseLevel = z.infer<typeof verboseLevelSchema>;
export type ReasoningLevel = z.infer<typeof reasoningLevelSchema>;
export type TtsAuto = z.infer<typeof ttsAutoSchema>;
export type QueueMode = z.infer<typeof queueModeSchema>;
export type DropPolicy = z.infer<typeof queueDropPolicySchema>;

export interface QueueDirective {
  mode?: QueueMode;
  /** `/queue reset`: back to the configured defaults */
  reset?: boolean;
  debounceMs?: number;
  cap?: number;
  drop?: DropPolicy;
}

export interface Directives {
  thinking?: ThinkLevel;
  verbose?: VerboseLevel;
  reasoning?: ReasoningLevel;
  /** when replies are also spoken (voice messages) */
  tts?: TtsAuto;
  /** a model ref; null: back to the agent's model */
  model?: string | null;
  queue?: QueueDirective;
}

export type Command =
  | { name: "new" | "reset"; rest: string }
  | { name: "stop" }
  | { name: "status" }
  | { name: "help" }
  | { name: "compact"; instructions: string }
  | { name: "approve" | "deny"; id: string }
  | { name: "subagents"; action: "list" | "stop"; target?: string }
  | { name: "pair"; action: "list" | "approve" | "deny"; code?: string }
  | { name: "usage"; days: number }
  /** the agent's recent sessions (owners) */
  | { name: "sessions" }
  /** only directives: change the session's settings (an empty set shows them) */
  | { name: "settings"; directives: Directives; show: Array<keyof Directives> };

export type Parsed =
  | { kind: "command"; command: Command }
  | { kind: "message"; text: string; directives: Directives }
  | { kind: "error"; message: string };

const THINK: Record<string, ThinkLevel> = { off: "off", "0": "off", none: "off", low: "low", "1": "low", l: "low", medium: "medium", "2": "medium", m: "medium", default: "medium", high: "high", "3": "high", h: "high" };
const VERBOSE: Record<string, VerboseLevel> = { off: "off", "0": "off", none: "off", default: "off", on: "low", low: "low", "1": "low", l: "low", high: "high", full: "high", "2": "high", h: "high" };
const REASONING: Record<string, ReasoningLevel> = { off: "off", on: "on", default: "on", stream: "stream" };
const TTS: Record<string, TtsAuto> = { off: "off", "0": "off", none: "off", on: "always", always: "always", "1": "always", inbound: "inbound", tagged: "tagged" };
const QUEUE_MODES: QueueMode[] = ["steer", "followup", "collect", "steer-backlog", "interrupt", "queue"];
const DROPS: DropPolicy[] = ["old", "new", "summarize"];

/** "500ms", "2s", "1m" or a number of ms. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/i.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = (m[2] ?? "ms").toLowerCase();
  return Math.round(unit === "m" ? n * 60_000 : unit === "s" ? n * 1000 : n);
}

interface LevelSpec<T> {
  key: "thinking" | "verbose" | "reasoning" | "tts";
  names: string[];
  table: Record<string, T>;
  allowed: string;
  /** values that only show the setting (the bare directive is "default") */
  show?: string[];
}

const LEVELS: Array<LevelSpec<string>> = [
  { key: "thinking", names: ["think", "t"], table: THINK, allowed: "off, low, medium or high" },
  { key: "verbose", names: ["verbose", "v"], table: VERBOSE, allowed: "off, on (low) or high (full)" },
  { key: "reasoning", names: ["reasoning", "reason"], table: REASONING, allowed: "off, on or stream" },
  { key: "tts", names: ["tts"], table: TTS, allowed: "off, on (always), inbound or tagged", show: ["default", "status"] },
];

class DirectiveError extends Error {}

/** Finds `/name`, `/name:value` or `/name value` (value from `spaceValues`) at a word start; removes it. */
function take(text: string, names: string[], spaceValue: (word: string) => boolean): { found: boolean; value?: string; rest: string } {
  const re = new RegExp(`(^|\\s)/(${names.join("|")})(?::(\\S*)|\\s+(\\S+))?(?=\\s|$)`, "i");
  const m = re.exec(text);
  if (!m) return { found: false, rest: text };
  let end = m.index + m[0].length;
  let value = m[3];
  if (m[4] !== undefined) {
    if (spaceValue(m[4])) value = m[4];
    else end = m.index + m[1]!.length + 1 + m[2]!.length; // the next word is message text
  }
  const rest = `${text.slice(0, m.index)}${m[1]}${text.slice(end)}`;
  return { found: true, ...(value !== undefined ? { value } : {}), rest };
}

function parseQueue(text: string): { directive?: QueueDirective; rest: string } {
  const re = /(^|\s)\/queue(?::(\S+))?((?:\s+(?:[a-z-]+:\S+|steer|followup|collect|steer-backlog|interrupt|queue|reset)(?=\s|$))*)(?=\s|$)/i;
  const m = re.exec(text);
  if (!m) return { rest: text };
  const words = [...(m[2] ? [m[2]] : []), ...m[3]!.trim().split(/\s+/).filter(Boolean)];
  const directive: QueueDirective = {};
  for (const word of words) {
    const lower = word.toLowerCase();
    if (lower === "reset") directive.reset = true;
    else if ((QUEUE_MODES as string[]).includes(lower)) directive.mode = lower as QueueMode;
    else {
      const [key, value = ""] = lower.split(/:(.*)/s) as [string, string?];
      if (key === "debounce") {
        const ms = parseDuration(value);
        if (ms === undefined || ms > 60_000) throw new DirectiveError(`/queue debounce:${value}: give a duration up to 60s, e.g. debounce:2s`);
        directive.debounceMs = ms;
      } else if (key === "cap") {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new DirectiveError(`/queue cap:${value}: give a whole number from 1 to 1000`);
        directive.cap = n;
      } else if (key === "drop") {
        if (!(DROPS as string[]).includes(value)) throw new DirectiveError(`/queue drop:${value}: use old, new or summarize`);
        directive.drop = value as DropPolicy;
      } else {
        throw new DirectiveError(`/queue ${word}: unknown; use a mode (${QUEUE_MODES.join(", ")}), debounce:, cap:, drop: or reset`);
      }
    }
  }
  return { directive, rest: `${text.slice(0, m.index)}${m[1]}${text.slice(m.index + m[0].length)}` };
}

const MODEL_RE = /^[A-Za-z0-9][A-Za-z0-9._:@+-]*(\/[A-Za-z0-9._:@+/-]+)?$/;

function extractDirectives(text: string): { directives: Directives; rest: string; seen: Array<keyof Directives> } {
  const directives: Directives = {};
  const seen: Array<keyof Directives> = [];
  let rest = text;
  for (const spec of LEVELS) {
    const found = take(rest, spec.names, (w) => spec.table[w.toLowerCase()] !== undefined || !!spec.show?.includes(w.toLowerCase()));
    if (!found.found) continue;
    rest = found.rest;
    seen.push(spec.key);
    const raw = (found.value ?? "default").toLowerCase();
    if (spec.show?.includes(raw === "" ? "default" : raw)) continue;
    const level = spec.table[raw === "" ? "default" : raw];
    if (!level) throw new DirectiveError(`/${spec.names[0]}:${found.value}: unknown level; use ${spec.allowed}`);
    (directives as Record<string, string>)[spec.key] = level;
  }
  const wholeModel = /^\s*\/model\s+(\S+)\s*$/i.exec(rest);
  const model = wholeModel ? { found: true, value: wholeModel[1], rest: "" } : take(rest, ["model"], (w) => w.includes("/") || /^(default|reset|off)$/i.test(w));
  if (model.found) {
    rest = model.rest;
    seen.push("model");
    if (model.value !== undefined && model.value !== "") {
      if (/^(default|reset|off)$/i.test(model.value)) directives.model = null;
      else if (MODEL_RE.test(model.value) && model.value.length <= 200) directives.model = model.value;
      else throw new DirectiveError(`/model ${model.value}: not a model reference; write provider/model, e.g. /model openai/gpt-4o-mini`);
    }
  }
  const queue = parseQueue(rest);
  if (queue.directive) {
    rest = queue.rest;
    seen.push("queue");
    if (Object.keys(queue.directive).length > 0) directives.queue = queue.directive;
  }
  return { directives, rest: rest.replace(/[ \t]{2,}/g, " ").trim(), seen };
}

const COMMAND_NAMES = new Set(["new", "reset", "stop", "abort", "status", "help", "commands", "compact", "approve", "deny", "subagents", "pair", "usage", "sessions"]);
/** /usage covers at most this many days (the ledger's default retention) */
export const MAX_USAGE_DAYS = 400;

function parseCommand(name: string, args: string): Parsed {
  const words = args.split(/\s+/).filter(Boolean);
  switch (name) {
    case "new":
    case "reset":
      return { kind: "command", command: { name, rest: args.trim() } };
    case "stop":
    case "abort":
      return { kind: "command", command: { name: "stop" } };
    case "status":
      return { kind: "command", command: { name: "status" } };
    case "help":
    case "commands":
      return { kind: "command", command: { name: "help" } };
    case "compact":
      return { kind: "command", command: { name: "compact", instructions: args.trim() } };
    case "approve":
    case "deny":
      if (words.length !== 1) return { kind: "error", message: `/${name} needs one approval ID, e.g. /${name} ap-123 (the ID is in the approval request)` };
      return { kind: "command", command: { name, id: words[0]! } };
    case "subagents": {
      const action = (words[0] ?? "list").toLowerCase();
      if (action === "list" && words.length <= 1) return { kind: "command", command: { name: "subagents", action: "list" } };
      if (action === "stop" && words.length === 2) return { kind: "command", command: { name: "subagents", action: "stop", target: words[1]! } };
      return { kind: "error", message: "use /subagents list, or /subagents stop KEY|RUNID|all" };
    }
    case "usage": {
      if (words.length === 0) return { kind: "command", command: { name: "usage", days: 1 } };
      const days = words.length === 1 && /^\d{1,3}$/.test(words[0]!) ? Number(words[0]) : NaN;
      if (!(days >= 1 && days <= MAX_USAGE_DAYS)) return { kind: "error", message: `use /usage for today, or /usage N for the last N days (1-${MAX_USAGE_DAYS})` };
      return { kind: "command", command: { name: "usage", days } };
    }
    case "sessions":
      if (words.length > 0) return { kind: "error", message: "/sessions takes no arguments: it lists this agent's recent sessions" };
      return { kind: "command", command: { name: "sessions" } };
    case "pair": {
      const action = (words[0] ?? "list").toLowerCase();
      if (action === "list" && words.length <= 1) return { kind: "command", command: { name: "pair", action: "list" } };
      if ((action === "approve" || action === "deny") && words.length === 2) return { kind: "command", command: { name: "pair", action, code: words[1]! } };
      return { kind: "error", message: "use /pair list, /pair approve CODE or /pair deny CODE (the code is in the pairing request)" };
    }
  }
  return { kind: "error", message: `unknown command /${name}` };
}

export function parseText(text: string): Parsed {
  const trimmed = text.trim();
  const head = /^\/([A-Za-z][A-Za-z-]*)(?:@\S+)?(?=\s|$)/.exec(trimmed);
  if (head && COMMAND_NAMES.has(head[1]!.toLowerCase())) return parseCommand(head[1]!.toLowerCase(), trimmed.slice(head[0].length));
  try {
    const { directives, rest, seen } = extractDirectives(text);
    if (seen.length === 0) return { kind: "message", text, directives };
    if (rest === "") return { kind: "command", command: { name: "settings", directives, show: seen } };
    return { kind: "message", text: rest, directives };
  } catch (err) {
    if (err instanceof DirectiveError) return { kind: "error", message: err.message };
    throw err;
  }
}
