/**
 * config.json as written, read and changed by `lurkbot config` and the security audit's fix
 * commands: read as JSON (no defaults, no environment), changed in place so every other key keeps
 * its value and its order, validated whole with the config schema (parseConfig, as every actor
 * loads it) before anything is written, then written atomically (mode 0600,
 * shared/runtime/atomic-write.ts, as `lurkbot onboard` writes it) with the file's own indentation.
 */
import { existsSync, readFileSync } from "node:fs";
import { LurkError, safeParseJson } from "../../shared/contract/index.js";
import { writeFileAtomicSync } from "../../shared/runtime/atomic-write.js";
import { configFilePath, defaultHome, parseConfig, type Env } from "../../shared/runtime/config.js";
import { CliError, EXIT } from "./errors.js";
import { formatPath, PathError, type Segment } from "./config-cmd-path.js";

export type Raw = Record<string, unknown>;

export interface ConfigFile {
  path: string;
  home: string;
  exists: boolean;
  raw: Raw;
  /** the indentation to write back with (the file's, else 2 spaces) */
  indent: string | number;
}

const isObject = (v: unknown): v is Raw => v !== null && typeof v === "object" && !Array.isArray(v);

/** config.json of LURKBOT_HOME ({} when there is none); a file that is not a JSON object is a CliError (exit 78). */
export function readConfigFile(env: Env): ConfigFile {
  const home = defaultHome(env);
  const path = configFilePath(home);
  if (!existsSync(path)) return { path, home, exists: false, raw: {}, indent: 2 };
  const text = readFileSync(path, "utf8");
  let parsed: unknown;
  try {
    parsed = safeParseJson(Buffer.from(text), { maxBytes: 4 * 1024 * 1024 });
  } catch (err) {
    throw new CliError(`cannot read ${path}: ${(err as Error).message}. Fix the file (it must be JSON), then run this again.`, EXIT.config);
  }
  if (!isObject(parsed)) throw new CliError(`${path} is not a JSON object. Fix the file, then run this again.`, EXIT.config);
  const m = /^\{\r?\n([ \t]+)\S/.exec(text);
  return { path, home, exists: true, raw: parsed, indent: m ? m[1]! : 2 };
}

/**
 * Validates `next` as the whole config and writes it atomically; nothing is written when it is
 * not valid (CliError, exit 78, naming the keys and the schema's messages). `what` names the change
 * for the message, e.g. "channels.web.port = 70000".
 */
export function writeConfigFile(file: ConfigFile, next: Raw, env: Env, what: string): void {
  try {
    parseConfig(next, env, file.home, file.path);
  } catch (err) {
    const msg = LurkError.is(err) ? err.message : (err as Error).message;
    throw new CliError(`${what}: the config would not be valid, so nothing was written: ${msg.replace(/^invalid configuration \([^)]*\): /, "")}`, EXIT.config);
  }
  writeFileAtomicSync(file.path, `${JSON.stringify(next, null, file.indent)}\n`, 0o600);
}

/** The element of `list` a segment names, and its index; undefined when there is none. */
function element(list: unknown[], s: Extract<Segment, { kind: "index" | "match" }>): number {
  if (s.kind === "index") return s.index < list.length ? s.index : -1;
  return list.findIndex((e) => isObject(e) && String(e[s.field]) === s.value);
}

function missing(segments: readonly Segment[], i: number, node: unknown): PathError {
  const at = formatPath(segments.slice(0, i + 1));
  const s = segments[i]!;
  if (s.kind === "match" && Array.isArray(node)) {
    const have = node.filter(isObject).map((e) => e[s.field]).filter((v) => v !== undefined).map(String);
    return new PathError(`no element with ${s.field}=${s.value} in ${formatPath(segments.slice(0, i))}${have.length ? ` (it has ${s.field} ${have.join(", ")})` : ""}`);
  }
  if (s.kind === "index" && Array.isArray(node)) return new PathError(`${formatPath(segments.slice(0, i))} has ${node.length} element${node.length === 1 ? "" : "s"}: there is no [${s.index}]`);
  return new PathError(`${at} is not set`);
}

/** The value at the path, or `{ found: false }` with the reason. */
export function getAt(root: unknown, segments: readonly Segment[]): { found: true; value: unknown } | { found: false; error: PathError } {
  let node: unknown = root;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    if (s.kind === "key") {
      if (!isObject(node) || !(s.key in node)) return { found: false, error: missing(segments, i, node) };
      node = node[s.key];
    } else {
      const at = Array.isArray(node) ? element(node, s) : -1;
      if (at < 0) return { found: false, error: missing(segments, i, node) };
      node = (node as unknown[])[at];
    }
  }
  return { found: true, value: node };
}

/**
 * A copy of `root` with the value set at the path: objects on the way are created, other values
 * keep their place (an existing key keeps its position; a new one goes last); `[N]` with N the
 * list's length appends. A PathError when the path goes through a value that is not an object or
 * list, or names an element that does not exist.
 */
export function setAt(root: Raw, segments: readonly Segment[], value: unknown): Raw {
  const copy = structuredClone(root);
  let node: unknown = copy;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const last = i === segments.length - 1;
    const nextIsList = !last && segments[i + 1]!.kind !== "key";
    if (s.kind === "key") {
      if (!isObject(node)) throw new PathError(`${formatPath(segments.slice(0, i))} is not an object in config.json: cannot set ${formatPath(segments)}`);
      if (last) node[s.key] = value;
      else if (node[s.key] === undefined || node[s.key] === null) node[s.key] = nextIsList ? [] : {};
      node = node[s.key];
      continue;
    }
    if (!Array.isArray(node)) throw new PathError(`${formatPath(segments.slice(0, i))} is not a list in config.json: cannot set ${formatPath(segments)}`);
    let at = element(node, s);
    if (at < 0 && s.kind === "index" && s.index === node.length) {
      node.push(last ? undefined : nextIsList ? [] : {});
      at = s.index;
    }
    if (at < 0) throw missing(segments, i, node);
    if (last) node[at] = value;
    node = node[at];
  }
  return copy;
}

/** A copy of `root` without the value at the path (a list element is removed, the rest move up); a PathError when it is not set. */
export function unsetAt(root: Raw, segments: readonly Segment[]): Raw {
  const copy = structuredClone(root);
  const parent = segments.length === 1 ? { found: true as const, value: copy } : getAt(copy, segments.slice(0, -1));
  if (!parent.found) throw parent.error;
  const s = segments[segments.length - 1]!;
  if (s.kind === "key") {
    if (!isObject(parent.value) || !(s.key in parent.value)) throw missing(segments, segments.length - 1, parent.value);
    delete parent.value[s.key];
  } else {
    const at = Array.isArray(parent.value) ? element(parent.value, s) : -1;
    if (at < 0) throw missing(segments, segments.length - 1, parent.value);
    (parent.value as unknown[]).splice(at, 1);
  }
  return copy;
}
