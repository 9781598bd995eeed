/**
 * The browser part of `lurkbot auth login`: OAuth 2.0 authorization code with PKCE (RFC 7636,
 * S256) and a random state. The redirect comes back to a loopback server of this process
 * (RFC 8252: `http://127.0.0.1:<free port>/callback`, or the configured loopback redirectUri);
 * a configured redirectUri elsewhere cannot reach the CLI, so the user pastes the address the
 * browser ended at (or the code, or `code#state`) on stdin — also accepted in loopback mode, for
 * a browser on another machine. A state that does not match ends the login with nothing stored.
 * The browser's page is answered once the tokens are stored (or the login failed).
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import type { OAuthClientConfig } from "../../shared/runtime/config-providers.js";
import { clientFields, requestTokens, type TokenResponse } from "../../shared/runtime/oauth-token-endpoint.js";
import { CliError } from "./errors.js";

export interface LoginIo {
  out(line: string): void;
  input: NodeJS.ReadableStream;
}

interface Arrival {
  code: string;
  /** answers the browser (loopback only): done, or the error */
  finish(error?: string): Promise<void>;
}

const LOOPBACK_HOSTS = ["127.0.0.1", "[::1]", "localhost"];

export function isLoopbackRedirect(uri: string): boolean {
  const url = new URL(uri);
  return url.protocol === "http:" && LOOPBACK_HOSTS.includes(url.hostname);
}

/** Runs the login of `label` (provider/id) and resolves with the tokens, a refresh token included, once `store` has kept them. */
export async function browserLogin(client: OAuthClientConfig & { authorizeUrl: string }, label: string, timeoutMs: number, io: LoginIo, store: (tokens: TokenResponse & { refreshToken: string }) => Promise<void>): Promise<void> {
  const again = `run \`lurkbot auth login ${label.replace("/", " ")}\` again`;
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const state = randomBytes(16).toString("base64url");
  const loopback = client.redirectUri === undefined || isLoopbackRedirect(client.redirectUri);
  const receiver = loopback ? await LoopbackReceiver.start(client.redirectUri, state, again) : undefined;
  const redirectUri = receiver?.redirectUri ?? client.redirectUri!;
  const url = new URL(client.authorizeUrl);
  // the configured extra params (e.g. Auth0's audience, RFC 8707's resource) go to the authorization request too
  const query = { ...(client.params ?? {}), client_id: client.clientId, response_type: "code", redirect_uri: redirectUri, ...(client.scope ? { scope: client.scope } : {}), state, code_challenge: challenge, code_challenge_method: "S256" };
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);

  io.out(`To log in to ${label}, open this address in a browser:`);
  io.out(`  ${url.toString()}`);
  if (receiver) io.out(`Waiting up to ${Math.round(timeoutMs / 1000)} s for the browser to come back to ${redirectUri} (Ctrl-C cancels); if the browser runs on another machine, paste the address it ends up at here.`);
  else io.out(`Then paste the URL you were sent to (or the code), and press Enter (up to ${Math.round(timeoutMs / 1000)} s):`);

  const rl = createInterface({ input: io.input, terminal: false });
  let timer: NodeJS.Timeout | undefined;
  let arrival: Arrival | undefined;
  try {
    const pasted = new Promise<Arrival>((resolve, reject) => {
      rl.on("line", (line) => {
        if (!line.trim()) return;
        try {
          resolve({ code: pastedCode(line.trim(), state, again), finish: async () => undefined });
        } catch (err) {
          reject(err);
        }
      });
      // in loopback mode the redirect may still come; otherwise nothing more can
      if (!receiver) rl.once("close", () => reject(new CliError(`stdin ended before a URL or code was pasted; ${again} and paste the address the browser ends up at.`)));
    });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CliError(`no login arrived within ${Math.round(timeoutMs / 1000)} s; ${again} (--timeout SEC waits longer).`)), timeoutMs);
    });
    arrival = await Promise.race([pasted, timeout, ...(receiver ? [receiver.arrival] : [])]);
    const tokens = await requestTokens(client, { grant_type: "authorization_code", code: arrival.code, redirect_uri: redirectUri, code_verifier: verifier, ...clientFields(client) }, {
      label: `the login of auth profile ${label}`,
      fix: `${again} (a code works once, for minutes); if it is refused again, check the profile's oauth clientId, redirectUri and tokenUrl in config.json`,
    });
    if (!tokens.refreshToken) {
      throw new CliError(`the OAuth server ${new URL(client.tokenUrl).host} gave no refresh token for ${label}, so LurkBot could not renew its access; nothing was stored. ` +
        `Ask for offline access — e.g. add "offline_access" to the profile's oauth.scope in config.json — and ${again}.`);
    }
    await store({ ...tokens, refreshToken: tokens.refreshToken });
    await arrival.finish();
  } catch (err) {
    await arrival?.finish((err as Error).message);
    throw err;
  } finally {
    clearTimeout(timer);
    rl.close();
    await receiver?.close();
  }
}

/** The code of a pasted redirect URL (its state checked), a bare code, or `code#state`. */
export function pastedCode(text: string, state: string, again: string): string {
  if (/^https?:\/\//i.test(text)) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new CliError(`the pasted text is not a URL; paste the whole address the browser ends up at, or just the code, and ${again}.`);
    }
    const hash = new URLSearchParams(url.hash.slice(1));
    return codeOf(url.searchParams.has("code") || url.searchParams.has("error") ? url.searchParams : hash, state, again);
  }
  const [code, pastedState] = text.split("#", 2) as [string, string | undefined];
  if (pastedState !== undefined && pastedState !== state) throw stateMismatch(again);
  if (!/^[\x21-\x7e]+$/.test(code)) throw new CliError(`that does not look like a code (it has spaces or other characters); ${again} and paste the address the browser ends up at.`);
  return code;
}

function codeOf(q: URLSearchParams, state: string, again: string): string {
  const error = q.get("error");
  if (error) {
    const description = q.get("error_description");
    throw new CliError(`the authorization server refused the login: ${error.slice(0, 100)}${description ? ` (${description.slice(0, 300)})` : ""}; check the profile's oauth clientId, scope and redirectUri in config.json, then ${again}.`);
  }
  const code = q.get("code");
  if (!code) throw new CliError(`the redirect carries no code; paste the address the browser ends up at after you log in, and ${again}.`);
  if (q.get("state") !== state) throw stateMismatch(again);
  return code;
}

const stateMismatch = (again: string) => new CliError(`the state of the redirect does not match this login (a redirect of another login, or a forged one); nothing was stored — ${again}.`);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: ServerResponse, status: number, text: string): Promise<void> {
  const body = `<!doctype html><meta charset="utf-8"><title>LurkBot</title><p>${escapeHtml(text)}</p>\n`;
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close", "cache-control": "no-store" });
  return new Promise((resolve) => res.end(body, () => resolve()));
}

/** The temporary loopback server the browser is redirected to; its first request to the path settles the login. */
class LoopbackReceiver {
  private constructor(private readonly server: ReturnType<typeof createServer>, readonly redirectUri: string, readonly arrival: Promise<Arrival>) {}

  static async start(configured: string | undefined, state: string, again: string): Promise<LoopbackReceiver> {
    const target = configured ? new URL(configured) : undefined;
    const host = target ? target.hostname.replace(/^\[|\]$/g, "") : "127.0.0.1";
    const path = target?.pathname ?? "/callback";
    let resolve!: (a: Arrival) => void;
    let reject!: (e: Error) => void;
    const arrival = new Promise<Arrival>((res, rej) => ((resolve = res), (reject = rej)));
    arrival.catch(() => undefined);
    let settled = false;
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://loopback");
      if (req.method !== "GET" || url.pathname !== path || settled) {
        void page(res, 404, settled ? "LurkBot: this login is already over." : "LurkBot: nothing here.");
        return;
      }
      settled = true;
      try {
        const code = codeOf(url.searchParams, state, again);
        resolve({ code, finish: (error) => page(res, error ? 400 : 200, error ? `LurkBot: login failed — ${error}` : "LurkBot: logged in, you can close this tab.") });
      } catch (err) {
        void page(res, 400, `LurkBot: login failed — ${(err as Error).message}`);
        reject(err as Error);
      }
    });
    const port = target ? Number(target.port || 80) : 0;
    await new Promise<void>((ok, fail) => {
      server.once("error", (err: NodeJS.ErrnoException) => fail(new CliError(`cannot listen on ${host}:${port} for the login's redirect (${err.code ?? err.message}); free that port, or change the profile's oauth.redirectUri in config.json.`)));
      server.listen(port, host, () => ok());
    });
    return new LoopbackReceiver(server, configured ?? `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, arrival);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
