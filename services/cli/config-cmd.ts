/**
 * `lurkbot config get [PATH] [--json] [--effective] | set PATH VALUE [--json-value|--string] |
 * unset PATH | path | validate | set-secret NAME`: config.json from the command line.
 *  - PATH: config-cmd-path.ts (`channels.web.port`, `agents[0].model`, `agents[id=main].model`,
 *    `models.entries["openai/gpt-4o"].cost`), checked against the config schema first: an unknown
 *    key is exit 64 with the nearest known ones.
 *  - VALUE: JSON when it parses as JSON (8790, true, null, {"a":1}, ["x"], "\"quoted\""), else the
 *    text as a string; `--json-value` requires JSON, `--string` takes the text as it is.
 *  - Writes (config-cmd-file.ts) validate the whole result with the config schema before writing
 *    (else exit 78 and nothing written), atomically, keeping every other key and its order.
 *  - Secrets (the audit's rule: apiKey, token, botToken, accessToken, password, …) are never
 *    written by `set` (exit 64, pointing to the environment variable or `config set-secret`, which
 *    stores them in credentials/secrets.json like `lurkbot onboard`), and `get` shows them as "***".
 */
import { loadConfig, configSecrets, type Env } from "../../shared/runtime/config.js";
import { CHANNEL_TOKEN_ENV } from "../../shared/runtime/config-channels.js";
import { LurkError } from "../../shared/contract/index.js";
import { isSecretEnvName } from "../../shared/runtime/secret-env.js";
import type { ParsedCommand } from "./args.js";
import { configSecretEntries, envFor, isSecretKey } from "./audit/files.js";
import { literalSecret, mcpSecretName } from "./audit/mcp.js";
import { CliError, EXIT, toCliError, UsageError } from "./errors.js";
import { checkPath, formatPath, parsePath, PathError, unknownKeys, type Segment } from "./config-cmd-path.js";
import { getAt, readConfigFile, setAt, unsetAt, writeConfigFile } from "./config-cmd-file.js";
import { isStorableSecret, readStoredSecrets, STORABLE_SECRETS, storedSecretsPath, writeStoredSecrets } from "./stored-secrets.js";

export interface ConfigIo {
  out(line: string): void;
  err(line: string): void;
  /** reads a secret for set-secret: without echo on a terminal, one line from a pipe */
  readSecret(message: string): Promise<string>;
}

export const REDACTED = "***";

const SUBCOMMANDS: Record<string, { args: [number, number]; usage: string; options: string[] }> = {
  get: { args: [0, 1], usage: "get [PATH] [--json] [--effective]", options: ["json", "effective"] },
  set: { args: [2, 2], usage: "set PATH VALUE [--json-value|--string]", options: ["json-value", "string"] },
  unset: { args: [1, 1], usage: "unset PATH", options: [] },
  path: { args: [0, 0], usage: "path", options: [] },
  validate: { args: [0, 0], usage: "validate", options: [] },
  "set-secret": { args: [1, 1], usage: "set-secret NAME", options: [] },
};

function checkArgs(p: ParsedCommand): { sub: string; args: string[] } {
  const [sub, ...args] = p.args;
  const spec = sub ? SUBCOMMANDS[sub] : undefined;
  const use = (m: string) => new UsageError(m, "config");
  if (!sub || !spec) throw use(`${sub ? `unknown subcommand "${sub}"` : "a subcommand is needed"}: lurkbot config ${Object.keys(SUBCOMMANDS).join("|")}.`);
  if (args.length < spec.args[0] || args.length > spec.args[1]) {
    throw use(`\`lurkbot config ${spec.usage}\`${args.length > spec.args[1] ? `: unexpected ${args.slice(spec.args[1]).map((a) => `"${a}"`).join(" ")}${sub === "set" ? " (quote a value with spaces: 'two words')" : ""}` : ": something is missing"}.`);
  }
  for (const name of Object.keys(p.options)) {
    if (p.options[name] !== undefined && !spec.options.includes(name)) throw use(`--${name} does not apply to \`lurkbot config ${sub}\`${spec.options.length ? ` (it takes ${spec.options.map((o) => `--${o}`).join(", ")})` : ""}.`);
  }
  if (p.options["json-value"] && p.options.string) throw use("--json-value and --string exclude each other.");
  return { sub, args };
}

/** The path parsed and checked against the schema; a PathError is a usage error (exit 64). */
function pathOf(text: string): Segment[] {
  try {
    const segments = parsePath(text);
    checkPath(segments);
    return segments;
  } catch (err) {
    if (err instanceof PathError) throw pathFailure(err);
    throw err;
  }
}

/** A bad path: exit 64 like a usage error, without the whole usage text after it. */
const pathFailure = (err: PathError) => new CliError(/[.?]$/.test(err.message) ? err.message : `${err.message}.`, EXIT.usage);

/** VALUE as JSON when it parses (or must: --json-value), else the text. */
export function parseValue(text: string, mode: "auto" | "json" | "string"): unknown {
  if (mode === "string") return text;
  try {
    return JSON.parse(text);
  } catch (err) {
    if (mode === "json") throw new UsageError(`--json-value: ${JSON.stringify(text)} is not JSON (${(err as Error).message}); strings need quotes: '"text"'.`, "config");
    return text;
  }
}

/** A secret's key: the audit's names (apiKey, botToken, …), or a secret environment variable's (hooks.entries.<name>.env.GITHUB_TOKEN). */
const secretKey = (key: string) => isSecretKey(key) || isSecretEnvName(key);

/** A copy with every secret-keyed string, and every string that is a known secret, replaced by "***". */
export function redact(value: unknown, secrets: ReadonlySet<string>, key?: string): unknown {
  if (typeof value === "string") return (key !== undefined && secretKey(key) && value) || secrets.has(value) ? REDACTED : value;
  if (Array.isArray(value)) return value.map((v) => redact(v, secrets));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redact(v, secrets, k)]));
  return value;
}

/** Secret values this process knows (the environment's, the stored ones, the effective config's), to mask wherever they appear. */
function knownSecrets(env: Env): Set<string> {
  const out = new Set<string>();
  for (const [name, value] of Object.entries(env)) if (value && value.length >= 8 && isSecretEnvName(name)) out.add(value);
  try {
    for (const s of configSecrets(loadConfig(env))) out.add(s);
  } catch {
    // a config that does not load: the key rule still redacts
  }
  return out;
}

function show(value: unknown, json: boolean): string {
  if (json) return JSON.stringify(value, null, 2);
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  if (value !== null && typeof value === "object") return JSON.stringify(value, null, 2);
  return String(value);
}

/** The environment variable (or none) that holds the secret of a config path. */
function secretGuidance(path: string): string {
  const generic = path.replace(/\[[^\]]*\]/g, "").replace(/\.(profiles|users)\./, ".");
  const env = envFor(generic) ?? CHANNEL_TOKEN_ENV.find((t) => generic === `channels.${t.channel}.${t.field}`)?.env;
  if (env && STORABLE_SECRETS.has(env)) return `store it with \`npx lurkbot config set-secret ${env}\` (reads it without echo into credentials/secrets.json, mode 600; the CLI hands it only to the actor that needs it), or export ${env} in the environment`;
  if (env) return `export ${env} in the environment instead`;
  return "keep secrets out of config.json where an environment variable exists (see the README's Configuration section); if this one must be there, edit config.json by hand and keep it mode 600";
}

/** `${NAME}`, after an optional auth scheme (`Bearer ${NAME}`): a reference to a secret (mcp.servers.*.env/headers), not one. */
const isReference = (v: unknown): boolean => typeof v === "string" && /^(\S+\s+)?\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(v);

/** A credential-looking literal in an MCP server's env or headers (audit/mcp.ts), anywhere in `value` set at `segments`: its path and how to store it. */
function mcpLiteral(segments: Segment[], value: unknown): { where: string; guidance: string } | undefined {
  if (segments[0]?.kind !== "key" || segments[0].key !== "mcp") return undefined;
  const walk = (keys: Segment[], v: unknown): { where: string; guidance: string } | undefined => {
    const at = keys.map((k) => (k.kind === "key" ? k.key : null));
    if (keys.length === 5 && at[1] === "servers" && (at[3] === "env" || at[3] === "headers") && at[2] && at[4]) {
      const hit = literalSecret(at[4], v);
      if (!hit) return undefined;
      const where = formatPath(keys);
      const variable = mcpSecretName(at[2], at[4]);
      return { where, guidance: `store it with \`npx lurkbot config set-secret ${variable}\` (credentials/secrets.json, mode 600; only the mcp actor gets LURKBOT_MCP_* secrets) and set ${where} to "${hit.scheme}\${${variable}}"` };
    }
    if (keys.length >= 5 || !v || typeof v !== "object" || Array.isArray(v)) return undefined;
    for (const [k, child] of Object.entries(v)) {
      const found = walk([...keys, { kind: "key", key: k }], child);
      if (found) return found;
    }
    return undefined;
  };
  return walk(segments, value);
}

function refuseSecrets(segments: Segment[], value: unknown): void {
  const path = formatPath(segments);
  const last = segments[segments.length - 1]!;
  const nested = configSecretEntries(value).filter(([, v]) => !isReference(v)).map(([at]) => (at.startsWith("[") ? `${path}${at}` : `${path}.${at}`));
  const envNamed = value && typeof value === "object" && !Array.isArray(value) ? Object.entries(value).filter(([k, v]) => isSecretEnvName(k) && !isReference(v)).map(([k]) => `${path}.${k}`) : [];
  const mcp = mcpLiteral(segments, value);
  const where = mcp?.where ?? (last.kind === "key" && secretKey(last.key) && typeof value === "string" && !isReference(value) ? path : nested[0] ?? envNamed[0]);
  if (!where) return;
  throw new CliError(`${where} is a secret, and config.json is read by every actor: \`config set\` does not write secrets there. Instead, ${mcp ? mcp.guidance : secretGuidance(where)}.`, EXIT.usage);
}

async function get(segments: Segment[] | undefined, p: ParsedCommand, env: Env, io: ConfigIo): Promise<number> {
  const json = p.options.json === true;
  const secrets = knownSecrets(env);
  let root: unknown;
  if (p.options.effective) {
    const cfg = loadConfig(env);
    root = cfg;
  } else {
    const file = readConfigFile(env);
    if (!file.exists && !segments) io.err(`(no ${file.path} yet: the defaults apply; \`npx lurkbot config get --effective\` shows them)`);
    root = file.raw;
  }
  if (!segments) {
    io.out(show(redact(root, secrets), true));
    return EXIT.ok;
  }
  const found = getAt(root, segments);
  if (!found.found) {
    if (p.options.effective) throw new CliError(`${found.error.message} (no default either).`);
    const effective = (() => {
      try {
        const r = getAt(loadConfig(env), segments);
        return r.found ? r.value : undefined;
      } catch {
        return undefined;
      }
    })();
    throw new CliError(`${found.error.message} in config.json${effective !== undefined ? `; its effective value (default or environment) is ${show(redact(effective, secrets, lastKey(segments)), false).split("\n").length > 1 ? "an object" : show(redact(effective, secrets, lastKey(segments)), false)}: \`npx lurkbot config get ${formatPath(segments)} --effective\`` : ""}.`);
  }
  io.out(show(redact(found.value, secrets, lastKey(segments)), json));
  return EXIT.ok;
}

const lastKey = (segments: Segment[]) => {
  const s = segments[segments.length - 1];
  return s?.kind === "key" ? s.key : undefined;
};

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? "undefined" : text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

async function set(segments: Segment[], text: string, p: ParsedCommand, env: Env, io: ConfigIo): Promise<number> {
  const value = parseValue(text, p.options["json-value"] ? "json" : p.options.string ? "string" : "auto");
  refuseSecrets(segments, value);
  const file = readConfigFile(env);
  const path = formatPath(segments);
  const before = getAt(file.raw, segments);
  if (before.found && JSON.stringify(before.value) === JSON.stringify(value)) {
    io.out(`${path} is already ${describe(value)} in ${file.path}`);
    return EXIT.ok;
  }
  const next = pathError(() => setAt(file.raw, segments, value));
  writeConfigFile(file, next, env, `${path} = ${describe(value)}`);
  io.out(`set ${path} = ${describe(value)} in ${file.path}${before.found ? ` (was ${describe(redact(before.value, new Set(), lastKey(segments)))})` : ""}`);
  const first = segments[0]!;
  io.out(first.kind === "key" && first.key === "hooks" ? "A running hooks actor applies it by itself (it watches config.json's hooks section)." : "Actors read config.json when they start: restart LurkBot (or that actor) to apply it.");
  return EXIT.ok;
}

async function unset(segments: Segment[], env: Env, io: ConfigIo): Promise<number> {
  const file = readConfigFile(env);
  const path = formatPath(segments);
  if (!getAt(file.raw, segments).found) {
    io.out(`${path} is not set in ${file.path}; nothing to do`);
    return EXIT.ok;
  }
  const next = pathError(() => unsetAt(file.raw, segments));
  writeConfigFile(file, next, env, `unset ${path}`);
  io.out(`unset ${path} in ${file.path} (its default applies now)`);
  return EXIT.ok;
}

function pathError<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof PathError) throw pathFailure(err);
    throw err;
  }
}

function validate(env: Env, io: ConfigIo): number {
  const file = readConfigFile(env);
  let problem: string | undefined;
  try {
    loadConfig(env);
  } catch (err) {
    problem = LurkError.is(err) ? err.message : toCliError(err).message;
  }
  const unknown = unknownKeys(file.raw);
  if (problem) io.err(`not valid: ${problem}`);
  for (const u of unknown) io.err(`unknown key ${u.path} (ignored when the config loads): ${u.message}`);
  if (problem) return EXIT.config;
  const what = file.exists ? file.path : "no config.json (defaults and environment)";
  if (unknown.length) io.err(`${what} loads, but ${unknown.length} key${unknown.length === 1 ? " is" : "s are"} unknown and ignored: fix or remove ${unknown.length === 1 ? "it" : "them"} (\`npx lurkbot config unset PATH\`).`);
  else io.out(`${what} is valid`);
  return unknown.length ? EXIT.config : EXIT.ok;
}

async function setSecret(name: string, env: Env, io: ConfigIo): Promise<number> {
  if (!isStorableSecret(name)) throw new UsageError(`"${name}" is not a secret LurkBot stores; it stores ${[...STORABLE_SECRETS].join(", ")}, and LURKBOT_MCP_<NAME> for MCP servers.`, "config");
  const value = (await io.readSecret(`${name} (not shown; from a pipe: one line)`)).trim();
  if (!value) throw new UsageError(`no value for ${name} was given (type it, or pipe it: printf %s "$TOKEN" | npx lurkbot config set-secret ${name}).`, "config");
  if (value.length > 4096 || /\s/.test(value)) throw new UsageError(`that is not a valid ${name}: ${value.length > 4096 ? "longer than 4096 characters" : "it has spaces"}.`, "config");
  const path = storedSecretsPath(env);
  const stored = readStoredSecrets(path);
  const had = stored[name] !== undefined;
  writeStoredSecrets(path, { ...stored, [name]: value });
  io.out(`${had ? "replaced" : "stored"} ${name} in ${path} (mode 600)`);
  if (env[name] && env[name] !== stored[name]) io.out(`note: ${name} is also set in your environment, and that one wins.`);
  return EXIT.ok;
}

export async function cmdConfig(p: ParsedCommand, env: Env, io: ConfigIo): Promise<number> {
  const { sub, args } = checkArgs(p);
  if (sub === "path") {
    const file = readConfigFile(env);
    io.out(file.path);
    if (!file.exists) io.err("(it does not exist yet: `npx lurkbot onboard` or `npx lurkbot config set …` creates it)");
    return EXIT.ok;
  }
  if (sub === "validate") return validate(env, io);
  if (sub === "set-secret") return setSecret(args[0]!, env, io);
  if (sub === "get") return get(args[0] === undefined ? undefined : pathOf(args[0]), p, env, io);
  const segments = pathOf(args[0]!);
  if (sub === "set") return set(segments, args[1]!, p, env, io);
  return unset(segments, env, io);
}
