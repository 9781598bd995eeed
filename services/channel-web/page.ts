/**
 * The single self-contained chat page: HTML with inline CSS and script, no external resources.
 * Served with a Content-Security-Policy that allows exactly this script and style (by hash),
 * connections to the page's own origin, frames only from it (the canvas), and no framing of the
 * page itself; the token never appears in Referer.
 */
import { createHash } from "node:crypto";
import { PAGE_SCRIPT } from "./page-script.js";
import { PAGE_STYLE } from "./page-style.js";

const hash = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

export function pageHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>LurkBot</title>
<link rel="icon" href="data:,">
<style>${PAGE_STYLE}</style>
</head>
<body>
<aside id="side">
  <h1>Lurk<span>Bot</span></h1>
  <button id="new-chat" type="button">+ New chat</button>
  <ul id="sessions" aria-label="Sessions"></ul>
</aside>
<main id="main">
  <header><span id="chat-title"></span><span id="status" class="offline">offline</span></header>
  <div id="log" aria-live="polite"></div>
  <div id="attached" aria-label="Files to send"></div>
  <form id="composer"><button id="attach" type="button" title="Attach files (or paste or drop them)" aria-label="Attach files">&#128206;</button><input id="file" type="file" multiple hidden><textarea id="input" rows="1" placeholder="Message LurkBot (Enter to send, Shift+Enter for a new line)"></textarea><button id="send" type="submit">Send</button></form>
</main>
<aside id="canvas" hidden aria-label="Canvas"><header><span id="canvas-title">Canvas</span><button id="canvas-close" type="button" title="Hide the canvas (it comes back when it changes)" aria-label="Hide the canvas">&times;</button></header><div id="canvas-body"></div></aside>
<div id="login"><form id="login-form"><strong>Sign in to LurkBot</strong>
  <span>Paste your web token (channels.web.token, or <code>web.token</code> in credentials/channels.json; with several users, your own from channels.web.users).</span>
  <input id="token" type="password" autocomplete="current-password" placeholder="token">
  <span id="login-err" class="err"></span><button type="submit">Open</button></form></div>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

export function pageResponse(): { body: Buffer; headers: Record<string, string> } {
  const body = Buffer.from(pageHtml(), "utf8");
  const csp = [
    "default-src 'none'",
    `script-src ${hash(PAGE_SCRIPT)}`,
    `style-src ${hash(PAGE_STYLE)}`,
    "connect-src 'self'",
    // the chat's images: fetched with the token (GET /media/<ref>), shown from blob: URLs; a canvas
    // Image from an http(s) address is fetched by the channel when the user clicks "Load image
    // from <host>" (GET /api/canvas/image, canvas-image.ts) and shown from a blob: URL too: the
    // page itself never loads from another host
    "img-src 'self' data: blob:",
    // a presented canvas document: GET /canvas/frame/<id>, sandboxed by its own CSP (canvas-frame.ts)
    "frame-src 'self'",
    // voice replies: played from blob: URLs too
    "media-src blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return {
    body,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-length": String(body.length),
      "content-security-policy": csp,
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
    },
  };
}
