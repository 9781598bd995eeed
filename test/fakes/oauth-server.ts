/**
 * A small OAuth 2.0 authorization server for tests (RFC 6749 + PKCE, RFC 7636):
 *  - GET /authorize: checks client_id, response_type=code and an S256 code_challenge, then
 *    redirects (302) to redirect_uri with a one-time code and the state (or, with
 *    `pasteCode`, shows the code as text, like servers whose redirect page shows it);
 *  - POST /token (form or JSON body): authorization_code (checks the PKCE verifier and the
 *    redirect_uri), refresh_token (rotates the refresh token: an old one is refused with
 *    invalid_grant) and client_credentials (checks the client secret).
 * Access tokens are `at-<n>`, refresh tokens `rt-<n>`; every issued access token is accepted by
 * `accepts()` (the fake LLM servers ask it) until `revoke()` or its expiry.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { closeLoopback, listenLoopback, readBody, sendJson } from "./http.js";

export interface OAuthServerOptions {
  clientId?: string;
  clientSecret?: string;
  /** lifetime of access tokens, seconds (`expires_in`) */
  expiresIn?: number;
  /** rotate refresh tokens on refresh (default true) */
  rotate?: boolean;
  /** answer a refresh this long after it arrives (to hold two refreshes in flight), ms */
  refreshDelayMs?: number;
}

interface Grant {
  challenge: string;
  redirectUri: string;
  scope: string;
}

export class FakeOAuthServer {
  private readonly server: Server;
  url = "";
  readonly clientId: string;
  readonly clientSecret: string;
  private n = 0;
  private readonly codes = new Map<string, Grant>();
  private readonly refreshTokens = new Set<string>();
  private readonly accessTokens = new Map<string, number>();
  /** the grant_type of every token request, in order */
  readonly requests: Array<{ grant: string; contentType: string; fields: Record<string, string> }> = [];
  /** refresh requests refused (an old or unknown refresh token) */
  refused = 0;
  /** the next token request gets this status and error instead (then it is cleared) */
  failNext: { status: number; error: string } | undefined;
  /** whether the authorization_code grant's answer has a refresh token (false: like a server not asked for offline access) */
  refreshOnCode = true;
  now: () => number = Date.now;

  constructor(private readonly opts: OAuthServerOptions = {}) {
    this.clientId = opts.clientId ?? "lurkbot-test";
    this.clientSecret = opts.clientSecret ?? "client-secret-123456";
    this.server = createServer((req, res) => {
      void this.handle(req.method ?? "GET", req.url ?? "/", req.headers["content-type"] ?? "", req).then(
        (r) => {
          if (r.redirect) {
            res.writeHead(302, { location: r.redirect });
            res.end();
          } else sendJson(res, r.status, r.body);
        },
        (err: Error) => sendJson(res, 500, { error: "server_error", error_description: err.message }),
      );
    });
  }

  static async start(opts: OAuthServerOptions = {}): Promise<FakeOAuthServer> {
    const s = new FakeOAuthServer(opts);
    s.url = await listenLoopback(s.server);
    return s;
  }

  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  get authorizeUrl(): string {
    return `${this.url}/authorize`;
  }

  /** Whether an LLM request's bearer token is one this server issued and has not revoked or expired. */
  accepts(authorization: string | undefined): boolean {
    const token = /^Bearer (.+)$/i.exec(authorization ?? "")?.[1];
    const until = token ? this.accessTokens.get(token) : undefined;
    return until !== undefined && until > this.now();
  }

  /** Revokes every access token issued so far (refresh tokens stay valid). */
  revokeAccessTokens(): void {
    this.accessTokens.clear();
  }

  /** Issues a refresh token directly (what a login elsewhere would have produced). */
  issueRefreshToken(): string {
    const rt = `rt-${++this.n}-${randomBytes(4).toString("hex")}`;
    this.refreshTokens.add(rt);
    return rt;
  }

  refreshCount(): number {
    return this.requests.filter((r) => r.grant === "refresh_token").length;
  }

  private issue(scope: string, withRefresh: boolean): Record<string, unknown> {
    const at = `at-${++this.n}-${randomBytes(4).toString("hex")}`;
    const expiresIn = this.opts.expiresIn ?? 3600;
    this.accessTokens.set(at, this.now() + expiresIn * 1000);
    const body: Record<string, unknown> = { access_token: at, token_type: "Bearer", expires_in: expiresIn, scope };
    if (withRefresh) body.refresh_token = this.issueRefreshToken();
    return body;
  }

  private async handle(method: string, rawUrl: string, contentType: string, req: import("node:http").IncomingMessage): Promise<{ status: number; body?: unknown; redirect?: string }> {
    const url = new URL(rawUrl, "http://x");
    if (method === "GET" && url.pathname === "/authorize") {
      const q = url.searchParams;
      if (q.get("client_id") !== this.clientId || q.get("response_type") !== "code" || q.get("code_challenge_method") !== "S256" || !q.get("code_challenge") || !q.get("redirect_uri")) {
        return { status: 400, body: { error: "invalid_request" } };
      }
      const code = `code-${randomBytes(6).toString("hex")}`;
      this.codes.set(code, { challenge: q.get("code_challenge")!, redirectUri: q.get("redirect_uri")!, scope: q.get("scope") ?? "" });
      const target = new URL(q.get("redirect_uri")!);
      target.searchParams.set("code", code);
      if (q.get("state")) target.searchParams.set("state", q.get("state")!);
      return { status: 302, redirect: target.toString() };
    }
    if (method !== "POST" || url.pathname !== "/token") return { status: 404, body: { error: "not_found" } };
    const text = await readBody(req);
    const fields: Record<string, string> = contentType.includes("json") ? (JSON.parse(text) as Record<string, string>) : Object.fromEntries(new URLSearchParams(text));
    const grant = fields.grant_type ?? "";
    this.requests.push({ grant, contentType, fields });
    if (this.failNext) {
      const f = this.failNext;
      this.failNext = undefined;
      return { status: f.status, body: { error: f.error, error_description: `forced ${f.error}` } };
    }
    if (fields.client_id !== this.clientId) return { status: 401, body: { error: "invalid_client" } };
    if (grant === "authorization_code") {
      const g = this.codes.get(fields.code ?? "");
      this.codes.delete(fields.code ?? "");
      const challenge = createHash("sha256").update(fields.code_verifier ?? "").digest("base64url");
      if (!g || g.challenge !== challenge || g.redirectUri !== fields.redirect_uri) return { status: 400, body: { error: "invalid_grant", error_description: "bad code, verifier or redirect_uri" } };
      return { status: 200, body: this.issue(g.scope, this.refreshOnCode) };
    }
    if (grant === "refresh_token") {
      if (this.opts.refreshDelayMs) await new Promise((r) => setTimeout(r, this.opts.refreshDelayMs));
      const rt = fields.refresh_token ?? "";
      if (!this.refreshTokens.has(rt)) {
        this.refused++;
        return { status: 400, body: { error: "invalid_grant", error_description: "unknown or used refresh token" } };
      }
      const rotate = this.opts.rotate ?? true;
      if (rotate) this.refreshTokens.delete(rt);
      return { status: 200, body: this.issue("", rotate) };
    }
    if (grant === "client_credentials") {
      if (fields.client_secret !== this.clientSecret) return { status: 401, body: { error: "invalid_client" } };
      return { status: 200, body: this.issue(fields.scope ?? "", false) };
    }
    return { status: 400, body: { error: "unsupported_grant_type" } };
  }

  close(): Promise<void> {
    return closeLoopback(this.server);
  }
}
