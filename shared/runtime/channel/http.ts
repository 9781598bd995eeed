/** Small node:http helpers for HTTP-facing channels: a capped body reader and JSON answers. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { timingSafeEqual } from "node:crypto";
import { LurkError } from "../../contract/index.js";

/** Reads the body; PAYLOAD_TOO_LARGE (without reading on) when it exceeds `maxBytes`. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > maxBytes) {
      req.resume();
      reject(new LurkError("PAYLOAD_TOO_LARGE", `the body is ${declared} bytes; at most ${maxBytes} are accepted`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners("data");
        req.resume();
        reject(new LurkError("PAYLOAD_TOO_LARGE", `the body exceeds ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A plain-text answer (a webhook's status line for the platform). */
export function sendText(res: ServerResponse, status: number, text = ""): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Constant-time string comparison (tokens, signatures). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Starts an HTTP server for a channel: `handler` serves each request; a handler that throws
 * gets `onError` (a 500 answer in the channel's error format, unless headers went out).
 * Resolves once listening, with the bound port (port 0 picks a free one).
 */
export async function listenHttp(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  opts: { host: string; port: number; requestTimeoutMs: number; onError(err: unknown, res: ServerResponse): void },
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    handler(req, res).catch((err) => {
      if (!res.headersSent) opts.onError(err, res);
      else res.end();
    });
  });
  server.requestTimeout = opts.requestTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** Stops accepting connections and closes the open ones. */
export function closeHttpServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
