/**
 * `GET /canvas/frame/<frameId>`: the HTML a `present` put on a canvas, for the page's
 * `<iframe sandbox="allow-scripts">`. The id (128 random bits, new with every present, forgotten
 * when the frame is replaced or the canvas reset) is the only key: an iframe cannot send the
 * bearer token, and the id gives nothing but that one document. Served with a CSP that
 * sandboxes it (an opaque origin: no cookies, no storage, no same-origin access to the chat page)
 * and allows only inline script and style and data: images, fonts and media: no network (no
 * fetch, XHR, WebSocket, remote images), no forms, no base URL, framed only by this origin.
 * (No CSP stops a script from navigating its own frame; the sandbox keeps it from the top page.)
 */
import type { ServerResponse } from "node:http";
import { sendJson } from "../../shared/runtime/channel/index.js";
import type { CanvasStore } from "./canvas-store.js";

const FRAME_ID = /^[0-9a-f]{32}$/;

export const CANVAS_FRAME_CSP = [
  "sandbox allow-scripts",
  "default-src 'none'",
  "script-src 'unsafe-inline'",
  "style-src 'unsafe-inline'",
  "img-src data:",
  "font-src data:",
  "media-src data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join("; ");

export function handleCanvasFrame(res: ServerResponse, frameId: string, store: CanvasStore): void {
  const frame = FRAME_ID.test(frameId) ? store.frame(frameId) : undefined;
  if (!frame) return sendJson(res, 404, { error: { code: "NOT_FOUND", message: "no such canvas frame (it was replaced or reset)" } });
  const body = Buffer.from(frame.content, "utf8");
  res.writeHead(200, {
    "content-type": "text/html; charset=utf-8",
    "content-length": String(body.length),
    "content-security-policy": CANVAS_FRAME_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
  });
  res.end(body);
}
