/**
 * `lurkbot auth list|login|import|logout|probe`: the auth profiles of the config and the tokens of
 * refresh_token OAuth profiles in the `lurk_auth` bucket, as the `cli` user. Tokens are read
 * from stdin (import) or the browser's redirect (login), never from the command line, and never
 * printed. list: auth-list.ts (with the agent-runners' cooldowns); the browser login: auth-login.ts;
 * probe: auth-probe.ts (one models-list call per profile through an agent-runner).
 */
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { oauthStateKey, safeParseJson, type OAuthState } from "../../shared/contract/index.js";
import { loadConfig, type Env, type LurkConfig } from "../../shared/runtime/config.js";
import { refreshGrant, requestTokens } from "../../shared/runtime/oauth-token-endpoint.js";
import type { ParsedCommand } from "./args.js";
import { openAuthBucket, readLogin, storeLogin, when } from "./auth-bucket.js";
import { formatAuthList, gatherAuthList } from "./auth-list.js";
import { browserLogin } from "./auth-login.js";
import { cmdAuthProbe, probeTarget } from "./auth-probe.js";
import { checkKnownProvider, checkProfileArgs, refreshTokenClient } from "./auth-profiles.js";
import { connectCli } from "./bus.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import { checkSubcommand, type SubcommandSpec } from "./subcommands.js";

export interface AuthIo {
  out(line: string): void;
  input: NodeJS.ReadableStream & { isTTY?: boolean };
}

type Sub = "list" | "login" | "import" | "logout" | "probe";

const SUBCOMMANDS: Record<Sub, SubcommandSpec> = {
  list: { arg: "none", options: ["json"] },
  probe: { arg: "optional", options: ["json", "timeout"] },
  login: { arg: "required", options: ["timeout"] },
  import: { arg: "required", options: [] },
  logout: { arg: "required", options: [] },
};

const DEFAULT_LOGIN_TIMEOUT_SEC = 300;
const MAX_IMPORT_BYTES = 64 * 1024;

export function checkAuthArgs(p: ParsedCommand): { sub: "list" } | { sub: "probe"; target?: string } | { sub: Exclude<Sub, "list" | "probe">; provider: string; id: string } {
  const what = "PROVIDER PROFILE, e.g. anthropic work";
  const { sub, arg } = checkSubcommand(p, "auth", SUBCOMMANDS, what);
  if (sub === "list") return { sub };
  if (sub === "probe") {
    if (p.args.length > 2) throw new UsageError(`\`lurkbot auth probe\` takes one PROVIDER or PROVIDER:PROFILE (e.g. openai:team); unexpected "${p.args[2]}".`, "auth");
    probeTarget(arg);
    return { sub, ...(arg !== undefined ? { target: arg } : {}) };
  }
  const [, provider, id] = p.args;
  if (id === undefined) throw new UsageError(`\`lurkbot auth ${sub}\` needs ${what} (see \`lurkbot auth list\`).`, "auth");
  checkProfileArgs(provider!, id);
  return { sub: sub as Exclude<Sub, "list" | "probe">, provider: provider!, id };
}

export async function cmdAuth(p: ParsedCommand, env: Env, io: AuthIo): Promise<number> {
  const args = checkAuthArgs(p);
  const cfg = loadConfig(env);
  if (args.sub === "list") {
    const { report, failure } = await gatherAuthList(cfg, env);
    io.out(p.options.json ? JSON.stringify(report, null, 2) : formatAuthList(report).trimEnd());
    if (failure) throw failure;
    return EXIT.ok;
  }
  if (args.sub === "probe") {
    const timeoutSec = p.options.timeout as number | undefined;
    return cmdAuthProbe(cfg, env, args.target, { ...(timeoutSec !== undefined ? { timeoutSec } : {}), json: p.options.json === true }, io.out);
  }
  const { provider, id } = args;
  const label = `${provider}/${id}`;
  if (args.sub === "login") {
    const client = refreshTokenClient(cfg, provider, id, "login");
    const timeoutMs = Math.round(((p.options.timeout as number | undefined) ?? DEFAULT_LOGIN_TIMEOUT_SEC) * 1000);
    // the bus first: a code spent while the bus is down would be lost
    return withBucket(cfg, env, true, async (kv) => {
      let stored: OAuthState | undefined;
      await browserLogin({ ...client, authorizeUrl: client.authorizeUrl! }, label, timeoutMs, io, async (tokens) => {
        stored = await storeLogin(kv, provider, id, tokens);
      });
      io.out(`logged in: ${label} (${accessText(stored!)})`);
      return EXIT.ok;
    });
  }
  if (args.sub === "import") {
    const client = refreshTokenClient(cfg, provider, id, "import");
    if (io.input.isTTY) io.out("Paste the refresh token (or the JSON { \"refresh_token\": … }), then press Ctrl-D:");
    const refreshToken = parseImport(await readInput(io.input));
    // the bus first: the check below may spend (rotate) the refresh token
    return withBucket(cfg, env, false, async (kv) => {
      const tokens = await requestTokens(client, refreshGrant(client, refreshToken), {
        label: `the imported refresh token of auth profile ${label}`,
        fix: `nothing was stored; check that the token was issued to this profile's OAuth client (clientId, tokenUrl in config.json) and is still valid, or log in with \`lurkbot auth login ${provider} ${id}\``,
      });
      const rotated = tokens.refreshToken !== undefined && tokens.refreshToken !== refreshToken;
      let stored: OAuthState;
      try {
        stored = await storeLogin(kv, provider, id, { ...tokens, refreshToken: tokens.refreshToken ?? refreshToken });
      } catch (err) {
        throw rotated ? new CliError(`${(err as Error).message} The server has already replaced the imported refresh token: log in with \`lurkbot auth login ${provider} ${id}\` or import a new one.`) : err;
      }
      io.out(`imported: ${label} (the refresh token works${rotated ? "; the server replaced it, the new one is stored" : ""}; ${accessText(stored)})`);
      return EXIT.ok;
    });
  }
  checkKnownProvider(cfg, provider);
  return withBucket(cfg, env, false, async (kv) => {
    const before = await readLogin(kv, provider, id);
    if (before.state === "none") {
      io.out(`${label} was not logged in (no tokens in the lurk_auth bucket); nothing to do.`);
      return EXIT.ok;
    }
    await kv.delete(oauthStateKey(provider, id));
    const until = before.state === "stored" && before.login.expiresAt !== undefined && before.login.expiresAt > Date.now() ? ` at ${when(before.login.expiresAt)}` : "";
    io.out(`logged out: ${label} — its tokens are deleted from the lurk_auth bucket. The grant is not revoked at the OAuth server, and an agent-runner holding the access token may use it until it expires${until}.`);
    return EXIT.ok;
  });
}

async function withBucket(cfg: LurkConfig, env: Env, reconnect: boolean, fn: (kv: KV) => Promise<number>): Promise<number> {
  const nc: NatsConnection = await connectCli(cfg, env, { reconnect });
  try {
    return await fn(await openAuthBucket(nc));
  } finally {
    await nc.close().catch(() => undefined);
  }
}

function accessText(state: OAuthState): string {
  if (!state.accessToken) return "no access token yet: fetched when first used";
  return state.expiresAt !== undefined ? `access token valid until ${when(state.expiresAt)}` : "access token expiry unknown";
}

async function readInput(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size > MAX_IMPORT_BYTES) throw new UsageError(`stdin holds more than ${MAX_IMPORT_BYTES / 1024} KiB; give just the refresh token, or the JSON { "refresh_token": … }.`, "auth");
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The refresh token of `auth import`'s input: a bare token or `{ "refresh_token": … }`. No message quotes the input. */
export function parseImport(text: string): string {
  const t = text.trim();
  const example = "e.g. `lurkbot auth import anthropic work < tokens.json`";
  if (!t) throw new UsageError(`nothing on stdin: pipe the refresh token, or the JSON { "refresh_token": … }, into the command, ${example}.`, "auth");
  if (t.startsWith("{")) {
    let value: unknown;
    try {
      value = safeParseJson(t, { maxBytes: MAX_IMPORT_BYTES, maxDepth: 8 });
    } catch {
      throw new UsageError(`stdin starts with "{" but is not valid JSON; give { "refresh_token": "…" } or the bare refresh token, ${example}.`, "auth");
    }
    const rt = (value as { refresh_token?: unknown } | null)?.refresh_token;
    if (typeof rt !== "string" || !rt.trim()) throw new UsageError(`the JSON on stdin has no "refresh_token" string; give { "refresh_token": "…", "access_token": "…", "expires_in": 3600 } or the bare refresh token.`, "auth");
    return rt.trim();
  }
  if (/\s/.test(t)) throw new UsageError(`stdin holds more than one word; give just the refresh token, or the JSON { "refresh_token": … }, ${example}.`, "auth");
  return t;
}
