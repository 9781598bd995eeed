/**
 * `GET /canvas/frame/<frameId>`: the HTML a `present` put on a canvas, for the page's sandboxed
 * `<iframe>`. The id (128 random bits, new with every present, forgotten when the frame is
 * replaced, the canvas reset or its session reset or deleted) is the only key: an iframe cannot
 * send the bearer token, and the id gives nothing but that one document.
 * Served with a CSP that sandboxes it (an opaque origin: no cookies, no storage, no same-origin
 * access to the chat page) and allows inline style and data: images, fonts and media only: no
 * fetch, XHR, WebSocket, remote images or styles, forms or base URL; framed only by this origin.
 * Scripts: none by default (`sandbox` without allow-scripts, `script-src 'none'`; the sandbox
 * also stops meta refresh). With `channels.web.canvas.allowScripts` inline scripts run, and then
 * the frame is NOT without network: CSP does not govern WebRTC, so a script can send data to any
 * address over STUN/TURN (and no CSP stops a script from navigating its own frame).
 */
import type { ServerResponse } from "node:http";
import { sendJson } from "../../shared/runtime/channel/index.js";
import type { CanvasStore } from "./canvas-store.js";

const FRAME_ID = /^[0-9a-f]{32}$/;

/** The frame's CSP; `scripts`: channels.web.canvas.allowScripts. */
export function canvasFrameCsp(scripts: boolean): string {
  return [
    scripts ? "sandbox allow-scripts" : "sandbox",
    "default-src 'none'",
    scripts ? "script-src 'unsafe-inline'" : "script-src 'none'",
    "style-src 'unsafe-inline'",
    "img-src data:",
    "font-src data:",
    "media-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
  ].join("; ");
}

/** The page's iframe `sandbox` attribute for the same setting. */
export function canvasFrameSandbox(scripts: boolean): string {
  return scripts ? "allow-scripts" : "";
}

export function handleCanvasFrame(res: ServerResponse, frameId: string, store: CanvasStore, scripts: boolean): void {
  const frame = FRAME_ID.test(frameId) ? store.frame(frameId) : undefined;
  if (!frame) return sendJson(res, 404, { error: { code: "NOT_FOUND", message: "no such canvas frame (it was replaced or reset)" } });
  const body = Buffer.from(frame.content, "utf8");
  res.writeHead(200, {
    "content-type": "text/html; charset=utf-8",
    "content-length": String(body.length),
    "content-security-policy": canvasFrameCsp(scripts),
    "x-content-type-options": "nosniff",
    "x-dns-prefetch-control": "off",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
  });
  res.end(body);
}
