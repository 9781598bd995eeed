/**
 * HTTP + WebSocket surface (node:http + ws). `GET /` serves the chat page (it holds no data;
 * it asks for the token); `GET /api/sessions`, `POST /upload` and `GET /media/<ref>` (files.ts)
 * need `Authorization: Bearer <token>`; `/ws` upgrades to the chat socket, whose first frame
 * must be `hello` with the token (else close 4401). The token names the user (users.ts: compared
 * with every user's token in constant time; a refusal looks the same whichever token was
 * wrong), and the request or socket then serves that user only. Browsers' cross-site sockets
 * (an Origin header naming another host) are refused before the upgrade.
 * `GET /canvas/frame/<frameId>` (canvas-frame.ts) serves a presented canvas document by its
 * unguessable id, sandboxed, for the page's iframe (which cannot send the token);
 * `GET /api/canvas/image` and `GET /api/canvas/media?kind=video|audio` (canvas-image.ts, with the
 * token) load a canvas's web image, video or audio the user clicked, server-side under the
 * public-address rule, at most 2 at once per user and 4 in all (canvas-media-slots.ts; more: 429).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { LurkError, safeParseJson } from "../../shared/contract/index.js";
import { closeHttpServer, listenHttp, sendJson, type ChannelContext } from "../../shared/runtime/channel/index.js";
import type { WebChannelConfig } from "../../shared/runtime/config-channels.js";
import { handleCanvasFrame } from "./canvas-frame.js";
import { handleCanvasMedia } from "./canvas-image.js";
import { CanvasMediaSlots } from "./canvas-media-slots.js";
import type { CanvasStore } from "./canvas-store.js";
import { handleMedia, handleUpload, type WebFiles } from "./files.js";
import type { Hub } from "./hub.js";
import { pageResponse } from "./page.js";
import { clientFrameSchema, type ReactFrame } from "./protocol.js";
import { UserReactions } from "./reactions.js";
import type { WebUser, WebUsers } from "./users.js";

export const CLOSE_UNAUTHORIZED = 4401;
const HELLO_TIMEOUT_MS = 10_000;
/** a `react` frame refused for what it asks (reactions.ts), not for a failure here */
const REACT_REFUSALS = new Set(["NOT_FOUND", "VALIDATION_FAILED", "LIMIT_EXCEEDED"]);
/** node's default request timeout, kept */
const REQUEST_TIMEOUT_MS = 300_000;

export interface WebServer { server: Server; port: number; close(): Promise<void> }

function bearerUser(req: IncomingMessage, users: WebUsers): WebUser | undefined {
  const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1]?.trim() ?? "";
  return users.authenticate(given);
}

/** A browser's Origin must name the host it connected to (no Origin: not a browser, allowed). */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (!origin) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

export async function startWebServer(ctx: ChannelContext<WebChannelConfig>, users: WebUsers, hub: Hub, files: WebFiles, canvas: CanvasStore): Promise<WebServer> {
  const { log, settings } = ctx;
  const media = ctx.rt.media;
  const page = pageResponse();
  const ready = (user: WebUser) => ({ type: "ready" as const, userId: user.id, name: user.name, maxFileBytes: media.maxFileBytes });
  const tokenHint = users.several ? "your own token from channels.web.users" : "<channels.web.token> (see <home>/credentials/channels.json)";
  /** canvas media fetches running now: 2 per user, 4 in all (more get 429) */
  const canvasFetches = new CanvasMediaSlots();
  /** the users' reactions from the page's picker (`react` frames) */
  const reactions = new UserReactions(ctx, hub);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && (path === "/" || path === "/index.html")) {
      res.writeHead(200, page.headers);
      res.end(page.body);
      return;
    }
    if (req.method === "GET" && path?.startsWith("/canvas/frame/")) return handleCanvasFrame(res, path.slice("/canvas/frame/".length), canvas, settings.canvas.allowScripts);
    const isUpload = path === "/upload";
    const isMedia = path?.startsWith("/media/") ?? false;
    if (path?.startsWith("/api/") || isUpload || isMedia) {
      const user = bearerUser(req, users);
      if (!user) {
        log.warn({ path, remote: req.socket.remoteAddress }, "request refused: bad or missing token");
        req.resume();
        return sendJson(res, 401, { error: { code: "UNAUTHORIZED", message: `a valid token is needed: send Authorization: Bearer ${tokenHint}` } }, { "www-authenticate": "Bearer" });
      }
      if (req.method === "GET" && path === "/api/sessions") return sendJson(res, 200, { sessions: await hub.sessions(user) });
      if (req.method === "POST" && isUpload) return handleUpload(req, res, media, files, user);
      if (req.method === "GET" && isMedia) return handleMedia(res, path!.slice("/media/".length), media, files, user);
      if (req.method === "GET" && (path === "/api/canvas/image" || path === "/api/canvas/media")) {
        const query = new URL(req.url ?? "/", "http://localhost").searchParams;
        const kind = path === "/api/canvas/image" ? "image" : query.get("kind");
        return handleCanvasMedia(res, kind, query, (chat) => hub.canvasOf(user, chat), ctx.config.tools.web.allowPrivateHosts, canvasFetches, user.id);
      }
    }
    req.resume();
    return sendJson(res, 404, { error: { code: "NOT_FOUND", message: `no route ${req.method} ${path}` } });
  };

  const { server, port } = await listenHttp(handle, {
    host: settings.host, port: settings.port, requestTimeoutMs: REQUEST_TIMEOUT_MS,
    onError: (err, res) => {
      const e = LurkError.from(err);
      log.error({ err: e.message, code: e.code }, "request failed");
      sendJson(res, e.code === "UNAVAILABLE" || e.code === "TIMEOUT" ? 503 : 500, { error: { code: e.code, message: e.message } });
    },
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: settings.maxMessageBytes });
  server.on("upgrade", (req, socket, head) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/ws" || !sameOrigin(req)) {
      socket.end(`HTTP/1.1 ${path !== "/ws" ? "404 Not Found" : "403 Forbidden"}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws, req));
  });

  const onSocket = (ws: WebSocket, req: IncomingMessage) => {
    /** the user this socket signed in as (its `hello`); until then only `hello` is accepted */
    let user: WebUser | undefined;
    const helloTimer = setTimeout(() => { if (!user) ws.close(CLOSE_UNAUTHORIZED, "no hello"); }, HELLO_TIMEOUT_MS);
    ws.on("close", () => {
      clearTimeout(helloTimer);
      hub.leave(ws);
    });
    ws.on("error", (err) => log.debug({ err: err.message }, "socket error"));
    ws.on("message", (data: RawData, isBinary: boolean) => {
      void onFrame(data, isBinary).catch((err) => {
        const e = LurkError.from(err);
        log.warn({ code: e.code, err: e.message }, "socket frame failed");
        hub.send(ws, { type: "error", code: e.code, message: e.message });
      });
    });
    /** a refused reaction (no such line of this user's chat, too many, the bus down) is an `error` frame about "react" */
    const react = async (u: WebUser, frame: ReactFrame) => {
      try {
        hub.send(ws, await reactions.react(u, frame));
      } catch (err) {
        const e = LurkError.from(err);
        // the frame's fault is the user's business; the bus or the store failing is the operator's
        log[REACT_REFUSALS.has(e.code) ? "debug" : "warn"]({ code: e.code, err: e.message, user: u.id }, "reaction refused");
        hub.send(ws, { type: "error", code: e.code, message: e.message, about: "react" });
      }
    };
    const onFrame = async (data: RawData, isBinary: boolean) => {
      let raw: unknown;
      try {
        if (isBinary) throw new LurkError("VALIDATION_FAILED", "frames are JSON text");
        raw = safeParseJson(data as Buffer, { maxBytes: settings.maxMessageBytes, maxDepth: 16 });
      } catch (err) {
        return hub.send(ws, { type: "error", code: "VALIDATION_FAILED", message: `the frame is not acceptable JSON: ${(err as Error).message}` });
      }
      const parsed = clientFrameSchema.safeParse(raw);
      if (!parsed.success) {
        if (!user) return ws.close(CLOSE_UNAUTHORIZED, "hello first");
        const about = (raw as { type?: unknown } | null)?.type === "react" ? { about: "react" as const } : {};
        return hub.send(ws, { type: "error", code: "VALIDATION_FAILED", message: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join(".") || "frame"}: ${i.message}`).join("; "), ...about });
      }
      const frame = parsed.data;
      if (!user) {
        const signedIn = frame.type === "hello" ? users.authenticate(frame.token) : undefined;
        if (!signedIn) {
          log.warn({ remote: req.socket.remoteAddress }, "socket refused: bad or missing token");
          return ws.close(CLOSE_UNAUTHORIZED, "bad token");
        }
        user = signedIn;
        clearTimeout(helloTimer);
        hub.join(ws, user);
        log.debug({ user: user.id }, "socket signed in");
        return hub.send(ws, ready(user));
      }
      switch (frame.type) {
        // a socket stays the user it signed in as; a later hello only repeats `ready`
        case "hello": return hub.send(ws, ready(user));
        case "open": return hub.open(ws, frame.chat, frame.since);
        case "send": return hub.inbound(ws, frame);
        case "canvas_action": return hub.canvasAction(ws, frame);
        case "react": return react(user, frame);
        case "sessions": return hub.send(ws, { type: "sessions", sessions: await hub.sessions(user) });
        case "ping": return hub.send(ws, { type: "pong" });
      }
    };
  };

  return {
    server,
    port,
    close: () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      return closeHttpServer(server);
    },
  };
}
