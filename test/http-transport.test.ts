/**
 * The providers' lean fetch (services/agent-runner/providers/http-transport.ts) against real
 * local HTTP and HTTPS servers: what it sends, streaming, aborts, cut and refused connections,
 * decoding, connection reuse and a stale kept-alive connection, redirects and the other cases it
 * leaves to the global fetch. The SDK paths over it are covered by the provider tests.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import zlib from "node:zlib";
import { httpTransport } from "../services/agent-runner/providers/http-transport.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** a local server whose handler each test sets; counts the connections it accepted */
class LocalServer {
  handler: Handler = (_req, res) => res.end("ok");
  connections = 0;
  readonly sockets = new Set<Socket>();
  private constructor(readonly server: http.Server, readonly origin: string) {}

  static async start(server: http.Server = http.createServer(), scheme = "http"): Promise<LocalServer> {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const local = new LocalServer(server, `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("connection", (s: Socket) => {
      local.connections++;
      local.sockets.add(s);
      s.on("close", () => local.sockets.delete(s));
    });
    server.on("secureConnection", () => undefined);
    server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      const parts: Buffer[] = [];
      req.on("data", (c: Buffer) => parts.push(c));
      req.on("end", () => local.handler(req, res, Buffer.concat(parts).toString("utf8")));
    });
    return local;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

const read = async (body: AsyncIterable<Uint8Array> | null): Promise<string> => {
  const parts: Buffer[] = [];
  for await (const chunk of body ?? []) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts).toString("utf8");
};

describe("the providers' HTTP transport", () => {
  let local: LocalServer;
  const agent = new http.Agent({ keepAlive: true });
  const lean = httpTransport({ httpAgent: agent });
  before(async () => { local = await LocalServer.start(); });
  after(async () => {
    agent.destroy();
    await local.close();
  });

  it("sends the method, headers and body, and answers with status, headers and text", async () => {
    let seen: { method?: string; url?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
    local.handler = (req, res, body) => {
      seen = { method: req.method, url: req.url, headers: req.headers, body };
      res.writeHead(201, "Made", { "content-type": "application/json", "x-request-id": "req-1" });
      res.end(JSON.stringify({ echo: body }));
    };
    const headers = new Headers({ "content-type": "application/json", authorization: "Bearer sk-test" });
    const res = await lean(`${local.origin}/v1/chat?x=1`, { method: "post", headers, body: '{"héllo":1}' });
    assert.equal(seen.method, "POST");
    assert.equal(seen.url, "/v1/chat?x=1");
    assert.equal(seen.headers?.authorization, "Bearer sk-test");
    assert.equal(seen.headers?.["content-length"], String(Buffer.byteLength('{"héllo":1}')));
    assert.equal(seen.body, '{"héllo":1}');
    assert.equal(res.status, 201);
    assert.equal(res.statusText, "Made");
    assert.equal(res.ok, true);
    assert.equal(res.url, `${local.origin}/v1/chat?x=1`);
    assert.equal(res.headers.get("x-request-id"), "req-1");
    assert.deepEqual(await res.json(), { echo: '{"héllo":1}' });
    assert.equal(res.bodyUsed, true);
    await assert.rejects(res.text(), /already been read/);

    // headers as a record or as pairs, bytes as the body
    await lean(`${local.origin}/r`, { method: "PUT", headers: { "X-One": "1" }, body: new TextEncoder().encode("bytes") });
    assert.equal(seen.headers?.["x-one"], "1");
    assert.equal(seen.body, "bytes");
    await lean(`${local.origin}/p`, { headers: [["x-two", "a"], ["X-Two", "b"]] });
    assert.equal(seen.method, "GET");
    assert.equal(seen.headers?.["x-two"], "a, b");
  });

  it("an error status is a response, not a rejection", async () => {
    local.handler = (_req, res) => {
      res.writeHead(429, { "retry-after": "3" });
      res.end("slow down");
    };
    const res = await lean(`${local.origin}/limited`, { method: "POST", body: "{}" });
    assert.equal(res.ok, false);
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "3");
    assert.equal(await res.text(), "slow down");
  });

  it("streams the body as it arrives", async () => {
    let next!: () => void;
    local.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: one\n\n");
      next = () => res.end("data: two\n\n");
    };
    const res = await lean(`${local.origin}/sse`, { method: "POST", body: "{}" });
    const chunks: string[] = [];
    for await (const chunk of res.body as unknown as AsyncIterable<Buffer>) {
      chunks.push(chunk.toString("utf8"));
      // the second part is only written once the first was read: nothing waits for the whole body
      if (chunks.length === 1) next();
    }
    assert.deepEqual(chunks, ["data: one\n\n", "data: two\n\n"]);
  });

  it("reuses a kept-alive connection, and sends again on a new one when the server had closed it", async () => {
    const ownAgent = new http.Agent({ keepAlive: true });
    const ownLean = httpTransport({ httpAgent: ownAgent });
    const before = local.connections;
    let served = 0;
    let dropNext = false;
    local.handler = (req, res) => {
      if (dropNext) {
        // a server that closed the idle connection just as the request went out
        dropNext = false;
        req.socket.destroy();
        return;
      }
      served++;
      res.end(`answer ${served}`);
    };
    assert.equal(await (await ownLean(`${local.origin}/a`)).text(), "answer 1");
    assert.equal(await (await ownLean(`${local.origin}/b`)).text(), "answer 2");
    assert.equal(local.connections - before, 1, "the second request used the first's connection");
    dropNext = true;
    assert.equal(await (await ownLean(`${local.origin}/c`, { method: "POST", body: "x" })).text(), "answer 3");
    assert.equal(local.connections - before, 2, "sent again on a new connection");
    ownAgent.destroy();
  });

  it("an abort before sending rejects with an AbortError and sends nothing", async () => {
    let requests = 0;
    local.handler = (_req, res) => {
      requests++;
      res.end("x");
    };
    const ctl = new AbortController();
    ctl.abort();
    await assert.rejects(lean(`${local.origin}/never`, { signal: ctl.signal }), (err: Error) => err.name === "AbortError");
    assert.equal(requests, 0);
  });

  it("an abort while waiting for the answer, or while reading the body, ends it with an AbortError", async () => {
    local.handler = () => undefined; // never answers
    const waiting = new AbortController();
    const pending = lean(`${local.origin}/hang`, { signal: waiting.signal });
    setTimeout(() => waiting.abort(), 20);
    await assert.rejects(pending, (err: Error) => err.name === "AbortError");

    let serverSawClose!: Promise<unknown>;
    local.handler = (req, res) => {
      serverSawClose = once(req.socket, "close");
      res.writeHead(200);
      res.write("first part ");
    };
    const reading = new AbortController();
    const res = await lean(`${local.origin}/stream`, { signal: reading.signal });
    const iterator = (res.body as unknown as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    assert.equal(String((await iterator.next()).value), "first part ");
    reading.abort();
    await assert.rejects(iterator.next(), (err: Error) => err.name === "AbortError");
    await serverSawClose; // the connection is closed, not left streaming
  });

  it("a body cut off by the server fails the read instead of ending it", async () => {
    local.handler = (req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: partial\n\n");
      setTimeout(() => req.socket.destroy(), 20);
    };
    const res = await lean(`${local.origin}/cut`);
    await assert.rejects(read(res.body as unknown as AsyncIterable<Uint8Array>));
  });

  it("a refused connection rejects like fetch: TypeError 'fetch failed' with the cause", async () => {
    const closed = await LocalServer.start();
    const origin = closed.origin;
    await closed.close();
    await assert.rejects(lean(`${origin}/x`), (err: TypeError & { cause?: NodeJS.ErrnoException }) => {
      assert.equal(err.name, "TypeError");
      assert.equal(err.message, "fetch failed");
      assert.equal(err.cause?.code, "ECONNREFUSED");
      return true;
    });
  });

  it("decodes gzip, deflate and br bodies; HEAD and 204 have no body", async () => {
    const text = "compressed answer ".repeat(50);
    for (const [encoding, encode] of [["gzip", zlib.gzipSync], ["deflate", zlib.deflateSync], ["br", zlib.brotliCompressSync]] as const) {
      local.handler = (_req, res) => {
        res.writeHead(200, { "content-encoding": encoding });
        res.end(encode(Buffer.from(text)));
      };
      assert.equal(await (await lean(`${local.origin}/z`)).text(), text, encoding);
    }
    local.handler = (_req, res) => {
      res.writeHead(204);
      res.end();
    };
    const none = await lean(`${local.origin}/none`, { method: "DELETE" });
    assert.equal(none.status, 204);
    assert.equal(none.body, null);
    assert.equal(await none.text(), "");
  });

  it("leaves redirects, other schemes, Request objects, streamed bodies and proxy settings to the global fetch", async () => {
    local.handler = (req, res, body) => {
      if (req.url === "/old") {
        res.writeHead(307, { location: "/new" });
        res.end();
      } else res.end(`at ${req.url} with ${body}`);
    };
    const moved = await lean(`${local.origin}/old`, { method: "POST", body: "payload" });
    assert.equal(await moved.text(), "at /new with payload");
    assert.equal(moved.redirected, true, "followed by fetch");

    const viaFallback: string[] = [];
    const spied = httpTransport({ httpAgent: agent, fallback: (input, init) => { viaFallback.push(String(input instanceof Request ? "Request" : input)); return fetch(input, init); } });
    assert.equal(await (await spied("data:text/plain,inline")).text(), "inline");
    assert.equal(await (await spied(new Request(`${local.origin}/req`))).text(), "at /req with ");
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("streamed")); c.close(); } });
    assert.equal(await (await spied(`${local.origin}/s`, { method: "POST", body: stream, duplex: "half" } as RequestInit)).text(), "at /s with streamed");
    assert.equal(await (await spied(`${local.origin}/plain`)).text(), "at /plain with ");
    assert.deepEqual(viaFallback, ["data:text/plain,inline", "Request", `${local.origin}/s`], "a plain request did not use the fallback");

    // with Node's proxy support on, everything goes through fetch, which applies it
    const proxied = httpTransport({ httpAgent: agent, env: { NODE_USE_ENV_PROXY: "1" }, fallback: (input, init) => { viaFallback.push(String(input)); return fetch(input, init); } });
    assert.equal(await (await proxied(`${local.origin}/via-proxy-support`)).text(), "at /via-proxy-support with ");
    assert.equal(viaFallback.at(-1), `${local.origin}/via-proxy-support`);
  });

  it("speaks HTTPS", async () => {
    const dir = new URL("../../test/fixtures/tls/", import.meta.url);
    const cert = readFileSync(new URL("localhost-cert.pem", dir));
    const secure = await LocalServer.start(https.createServer({ cert, key: readFileSync(new URL("localhost-key.pem", dir)) }), "https");
    const httpsAgent = new https.Agent({ keepAlive: true, ca: cert });
    try {
      secure.handler = (req, res, body) => res.end(`secure ${req.method} ${body}`);
      const res = await httpTransport({ httpsAgent })(`${secure.origin}/v1`, { method: "POST", body: "hi" });
      assert.equal(await res.text(), "secure POST hi");
      // and an untrusted certificate is refused
      await assert.rejects(httpTransport({ httpsAgent: new https.Agent() })(`${secure.origin}/v1`), (err: TypeError & { cause?: NodeJS.ErrnoException }) => err.message === "fetch failed" && /self.signed|DEPTH_ZERO/i.test(String(err.cause?.code ?? err.cause?.message)));
    } finally {
      httpsAgent.destroy();
      await secure.close();
    }
  });
});
