/**
 * Config paths of `lurkbot config get|set|unset`: dotted keys, with list elements by index or by a
 * field's value, and keys that hold dots or slashes in quotes:
 *   channels.web.port   agents[0].model   agents[id=main].model   models.entries["openai/gpt-4o"].cost
 * `[N]` is the Nth element (0-based; in `set`, N = the list's length appends), `[field=value]` the
 * element whose `field` is `value` (`agents[id=work]`). A path is checked against the config schema
 * (shared/runtime/config.ts, as JSON Schema) before anything is read or written: a key the schema
 * does not know is a PathError naming the nearest known keys (the schema drops unknown keys
 * silently, so a typo would otherwise be written and never take effect).
 */
import { configSchema } from "../../shared/runtime/config.js";
import { jsonSchemaOf } from "../../shared/runtime/json-schema-of.js";

export type Segment = { kind: "key"; key: string } | { kind: "index"; index: number } | { kind: "match"; field: string; value: string };

export class PathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PathError";
  }
}

const KEY = /^[A-Za-z0-9_$-]+/;

/** The segments of a path; a PathError says what is wrong with the text. */
export function parsePath(text: string): Segment[] {
  const out: Segment[] = [];
  let i = 0;
  const fail = (why: string) => new PathError(`bad path "${text}": ${why} (write it as channels.web.port, agents[0].model, agents[id=main].model or models.entries["openai/gpt-4o"])`);
  if (!text.trim()) throw fail("it is empty");
  while (i < text.length) {
    if (text[i] === "[") {
      const quoteEnd = text[i + 1] === '"' ? text.indexOf('"', i + 2) : i;
      const end = quoteEnd < 0 ? -1 : text.indexOf("]", quoteEnd);
      if (end < 0) throw fail(`"[" at ${i + 1} is not closed`);
      const inner = text.slice(i + 1, end);
      if (/^\d+$/.test(inner)) out.push({ kind: "index", index: Number(inner) });
      else if (/^"[^"]+"$/.test(inner)) out.push({ kind: "key", key: inner.slice(1, -1) });
      else if (/^[A-Za-z0-9_-]+=[^\]]+$/.test(inner)) {
        const eq = inner.indexOf("=");
        out.push({ kind: "match", field: inner.slice(0, eq), value: inner.slice(eq + 1) });
      } else throw fail(`"[${inner}]" is neither an index [0], a match [id=main] nor a quoted key ["a/b"]`);
      i = end + 1;
      if (i < text.length && text[i] !== "." && text[i] !== "[") throw fail(`a "." or "[" must follow "]" at ${i}`);
      if (text[i] === ".") i++;
      continue;
    }
    const m = KEY.exec(text.slice(i));
    if (!m) throw fail(`unexpected "${text[i]}" at ${i + 1}`);
    out.push({ kind: "key", key: m[0] });
    i += m[0].length;
    if (i < text.length) {
      if (text[i] === ".") {
        i++;
        if (i >= text.length) throw fail("it ends with a dot");
      } else if (text[i] !== "[") throw fail(`unexpected "${text[i]}" at ${i + 1}`);
    }
  }
  if (out[0]?.kind !== "key") throw fail("it must start with a key");
  return out;
}

/** The path written back, e.g. `agents[id=main].model`. */
export function formatPath(segments: readonly Segment[]): string {
  let out = "";
  for (const s of segments) {
    if (s.kind === "index") out += `[${s.index}]`;
    else if (s.kind === "match") out += `[${s.field}=${s.value}]`;
    else out += KEY.exec(s.key)?.[0] === s.key ? `${out ? "." : ""}${s.key}` : `["${s.key}"]`;
  }
  return out;
}

// --- the schema -------------------------------------------------------------------------------

type Json = Record<string, any>;
let cached: Json | undefined;

/** The config schema as JSON Schema (the input side: defaults optional, as the tool catalog's), built once. */
function configJsonSchema(): Json {
  cached ??= jsonSchemaOf(configSchema) as Json;
  return cached;
}

/** The alternatives a schema node stands for (anyOf/oneOf flattened). */
function alternatives(node: Json): Json[] {
  const list = node.anyOf ?? node.oneOf;
  if (Array.isArray(list)) return (list as Json[]).flatMap(alternatives);
  if (Array.isArray(node.allOf)) return [Object.assign({}, ...(node.allOf as Json[]))];
  return [node];
}

/** a node that says nothing of its shape (unrepresentable, or `{}`): anything goes below it */
const isAny = (n: Json) => n.type === undefined && n.properties === undefined && n.items === undefined && n.additionalProperties === undefined && n.enum === undefined && n.const === undefined;

/** Levenshtein distance, for suggestions. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

/** The known keys nearest to `key` (at most 3), best first. */
export function suggest(key: string, known: readonly string[]): string[] {
  const scored = known.map((k) => ({ k, d: distance(key, k) })).filter(({ k, d }) => d <= Math.max(2, Math.floor(k.length / 3)) || k.toLowerCase().startsWith(key.toLowerCase()));
  return scored.sort((a, b) => a.d - b.d).slice(0, 3).map(({ k }) => k);
}

/** OpenClaw's names of top-level sections LurkBot calls otherwise. */
const RENAMED: Record<string, string> = {
  gateway: "LurkBot has no gateway section: the web chat's address is channels.web.host and channels.web.port (e.g. `lurkbot config set channels.web.host 127.0.0.1`)",
  session: "the DM session scope is routing.dmScope (e.g. `lurkbot config set routing.dmScope per-channel-peer`), resets are under sessions",
};

function unknownKey(key: string, where: string, known: string[]): PathError {
  if (!where && RENAMED[key]) return new PathError(`no key \`${key}\` in config: ${RENAMED[key]}`);
  const close = suggest(key, known);
  const at = where ? `in ${where}` : "in config";
  return new PathError(`no key \`${key}\` ${at}${close.length ? `; did you mean ${close.map((c) => `\`${c}\``).join(" or ")}?` : known.length ? ` (it has ${known.slice(0, 30).map((k) => `\`${k}\``).join(", ")}${known.length > 30 ? ", …" : ""})` : ""}`);
}

/** Keys computed at load time: setting them in config.json has no effect. */
const COMPUTED: Record<string, string> = { home: "set LURKBOT_HOME in the environment instead" };

/**
 * Checks the path against the schema: every key must be one the config knows, and only lists take
 * [N] or [field=value]. Returns the schema node of the path's value (for `--effective` hints).
 */
export function checkPath(segments: readonly Segment[]): Json {
  const first = segments[0];
  if (first?.kind === "key" && COMPUTED[first.key] && segments.length === 1) throw new PathError(`\`${first.key}\` is computed when the config loads: ${COMPUTED[first.key]}`);
  let nodes: Json[] = [configJsonSchema()];
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const where = formatPath(segments.slice(0, i));
    const alts = nodes.flatMap(alternatives);
    if (alts.some(isAny)) return {};
    const next: Json[] = [];
    if (s.kind === "key") {
      const known = new Set<string>();
      for (const n of alts) {
        if (n.type !== "object" && n.properties === undefined && n.additionalProperties === undefined) continue;
        const prop = n.properties?.[s.key];
        if (prop) next.push(prop);
        else if (n.additionalProperties !== undefined && n.additionalProperties !== false) {
          const names = n.propertyNames as Json | undefined;
          if (Array.isArray(names?.enum) && !(names!.enum as string[]).includes(s.key)) {
            for (const k of names!.enum as string[]) known.add(k);
            continue;
          }
          next.push(n.additionalProperties === true ? {} : n.additionalProperties);
        }
        for (const k of Object.keys(n.properties ?? {})) known.add(k);
      }
      if (next.length === 0) {
        if (!alts.some((n) => n.type === "object" || n.properties)) throw new PathError(`\`${where}\` is ${describeType(alts)}, not an object: \`${s.key}\` cannot be under it`);
        throw unknownKey(s.key, where, [...known].filter((k) => !COMPUTED[k] || i > 0));
      }
    } else {
      for (const n of alts) if (n.type === "array" && n.items) next.push(n.items);
      if (next.length === 0) throw new PathError(`\`${where}\` is ${describeType(alts)}, not a list: [${s.kind === "index" ? s.index : `${s.field}=${s.value}`}] cannot follow it`);
    }
    nodes = next;
  }
  return nodes.length === 1 ? nodes[0]! : { anyOf: nodes };
}

function describeType(alts: Json[]): string {
  const types = [...new Set(alts.map((n) => (n.type ?? (n.enum ? "one of a list" : "a value")) as string))];
  return types.map((t) => (t === "object" ? "an object" : t === "array" ? "a list" : t === "integer" || t === "number" ? "a number" : t === "boolean" ? "a boolean" : t === "string" ? "a string" : t)).join(" or ");
}

/**
 * Keys of a raw config the schema does not know (each with its path and the nearest known keys):
 * they are dropped when the config loads, so they never take effect.
 */
export function unknownKeys(raw: unknown): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  const walk = (value: unknown, segments: Segment[]) => {
    if (out.length >= 50) return;
    if (Array.isArray(value)) {
      value.forEach((v, index) => walk(v, [...segments, { kind: "index", index }]));
      return;
    }
    if (!value || typeof value !== "object") return;
    for (const key of Object.keys(value)) {
      const next: Segment[] = [...segments, { kind: "key", key }];
      try {
        const node = checkPath(next);
        if (!isAny(node)) walk((value as Record<string, unknown>)[key], next);
      } catch (err) {
        if (err instanceof PathError && !(segments.length === 0 && COMPUTED[key])) out.push({ path: formatPath(next), message: err.message });
      }
    }
  };
  walk(raw, []);
  return out;
}
