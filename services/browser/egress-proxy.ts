/**
 * The browser's only way out: an HTTP forward proxy on a random loopback port that Chromium is
 * started with (every request, loopback ones included: playwright-core adds `<-loopback>` to
 * the bypass list). Each request and each CONNECT tunnel (https, ws, wss) is checked with
 * egress.ts (resolved, every address public or the host allowed) and then connected to the
 * checked address, so redirects, subresources, frames, WebSockets, service workers and
 * prefetches are held to the same rule as navigations, and DNS rebinding cannot swap the address
 * after the check. A refused plain request gets a 403 page carrying `x-lurkbot-refused`, a
 * refused tunnel a 403 to its CONNECT (a host that does not resolve: 502); each is remembered
 * (`refusalsSince`) so a tool result can say what was blocked, or not found, and why.
 * Limits: it listens on loopback without credentials, so a local process could use it, but it
 * reaches only what the browser may reach; UDP (WebRTC) does not pass it: Chromium is started
 * with non-proxied UDP disabled (session.ts).
 */
import http from "node:http";
import net, { type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserLog as Logger } from "./protocol.js";
import { bareHost, pinnedLookup, portOf, type Target } from "../../shared/runtime/public-address.js";
import { resolveTarget } from "./egress.js";

export interface Refusal {
  at: number;
  /** scheme://host:port of what was not relayed */
  origin: string;
  /** "forbidden": the egress rule refused it; "failed": its host could not be resolved */
  kind: "forbidden" | "failed";
  reason: string;
}

const KEEP_REFUSALS = 50;
const CONNECT_TIMEOUT_MS = 30_000;
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"]);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export class EgressProxy {
  private readonly refusals: Refusal[] = [];
  private readonly sockets = new Set<Duplex>();
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

  private constructor(private readonly server: http.Server, readonly port: number) {}

  /** Listens on 127.0.0.1 (a free port); `allow` is tools.web.allowPrivateHosts. */
  static async start(allow: readonly string[], log: Logger): Promise<EgressProxy> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const proxy = new EgressProxy(server, (server.address() as net.AddressInfo).port);
    server.on("connection", (s: Socket) => proxy.track(s));
    server.on("request", (req, res) => void proxy.relay(req, res, allow, log));
    server.on("connect", (req, socket, head) => void proxy.tunnel(req, socket, head, allow, log));
    // a WebSocket upgrade as a plain proxy request: Chromium tunnels them with CONNECT, so refuse
    server.on("upgrade", (_req, socket: Duplex) => socket.destroy());
    return proxy;
  }

  /** What was refused since `since` (ms epoch), oldest first. */
  refusalsSince(since: number): Refusal[] {
    return this.refusals.filter((r) => r.at >= since);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.agent.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(s: Duplex): void {
    this.sockets.add(s);
    s.once("close", () => this.sockets.delete(s));
  }

  private refuse(origin: string, err: unknown, log: Logger): Refusal {
    const e = LurkError.from(err);
    const refusal: Refusal = { at: Date.now(), origin, kind: e.code === "FORBIDDEN" ? "forbidden" : "failed", reason: e.message };
    this.refusals.push(refusal);
    if (this.refusals.length > KEEP_REFUSALS) this.refusals.shift();
    if (refusal.kind === "forbidden") log.info({ origin, reason: refusal.reason }, "browser request refused");
    return refusal;
  }

  /** A plain http:// request in absolute form. */
  private async relay(req: http.IncomingMessage, res: http.ServerResponse, allow: readonly string[], log: Logger): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? "");
      if (url.protocol !== "http:") throw new Error("not http");
    } catch {
      res.writeHead(400).end();
      return;
    }
    let target: Target;
    try {
      target = await resolveTarget(url, allow);
    } catch (err) {
      const refusal = this.refuse(`http://${url.host}`, err, log);
      const forbidden = refusal.kind === "forbidden";
      res.writeHead(forbidden ? 403 : 502, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...(forbidden ? { "x-lurkbot-refused": "1" } : {}) });
      const title = forbidden ? "Blocked by LurkBot" : "Not reachable";
      res.end(`<!doctype html><title>${title}</title><h1>${title}</h1><p>${escapeHtml(refusal.reason)}</p>`);
      return;
    }
    const upstream = http.request({
      hostname: bareHost(url), port: portOf(url), path: `${url.pathname}${url.search}`, method: req.method,
      headers: endToEnd(req.headers), agent: this.agent, setHost: false,
      lookup: pinnedLookup(target),
    });
    upstream.on("response", (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, endToEnd(up.headers));
      up.pipe(res);
    });
    upstream.on("error", (err) => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { "content-type": "text/plain" }).end(`LurkBot could not reach ${url.host}: ${err.message}`);
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  }

  /** A CONNECT tunnel (https, ws, wss): checked, then bytes both ways to the checked address. */
  private async tunnel(req: http.IncomingMessage, socket: Duplex, head: Buffer, allow: readonly string[], log: Logger): Promise<void> {
    this.track(socket);
    socket.on("error", () => socket.destroy());
    let url: URL;
    try {
      url = new URL(`https://${req.url ?? ""}`);
    } catch {
      socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
      return;
    }
    let target: Target;
    try {
      target = await resolveTarget(url, allow);
    } catch (err) {
      const forbidden = this.refuse(`https://${url.host}`, err, log).kind === "forbidden";
      socket.end(forbidden ? "HTTP/1.1 403 Forbidden\r\nx-lurkbot-refused: 1\r\n\r\n" : "HTTP/1.1 502 Bad Gateway\r\n\r\n");
      return;
    }
    const upstream = net.connect({ host: target.address, port: Number(portOf(url)), family: target.family });
    this.track(upstream);
    upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy(new Error("connect timeout")));
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      upstream.setTimeout(0);
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("error", () => {
      if (!connected && !socket.destroyed) socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
    });
    upstream.on("close", () => socket.destroy());
    socket.on("close", () => upstream.destroy());
  }
}
