/**
 * The web tools. Pure parts: the `isPublicAddress` table and the HTML-to-text converter. Over
 * the bus (the tools actor as a real child process on a real nats-server, called as the
 * agent-runner user): web_fetch of a page on a local server allowed by
 * tools.web.allowPrivateHosts, redirects that lead to private addresses refused before any
 * connection (a canary server on 127.0.0.2, not allowed, must see none), schemes, binary
 * content, the body cap; web_search against fake SearXNG and Brave servers (the key never in a
 * reply or the actor's log), and with no provider configured.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ToolCallReply } from "../shared/contract/index.js";
import { isPublicAddress } from "../services/tools/web/address.js";
import { htmlToText } from "../services/tools/web/html.js";
import { isAllowedPrivateHost, requestOnce } from "../services/tools/web/http.js";
import { startToolsActor, textOf, toolCaller, type ToolsActorUnderTest } from "./harness/tools-actor.js";

const CAP = 8192;
const BRAVE_KEY = "BSA-fake-key-5b1c0ffee0123456789";

describe("isPublicAddress", () => {
  const table: Array<[string, boolean]> = [
    ["10.0.0.1", false], ["10.255.255.255", false], ["172.16.0.1", false], ["172.31.255.254", false], ["172.15.0.1", true], ["172.32.0.1", true],
    ["192.168.1.1", false], ["127.0.0.1", false], ["127.1.2.3", false], ["0.0.0.0", false], ["0.1.2.3", false],
    ["169.254.169.254", false], ["100.64.0.1", false], ["100.127.255.255", false], ["100.128.0.1", true], ["224.0.0.1", false],
    ["239.255.255.250", false], ["255.255.255.255", false], ["240.0.0.1", false], ["192.0.2.1", false], ["198.18.0.1", false],
    ["::1", false], ["::", false], ["fe80::1", false], ["fe80::1%eth0", false], ["fc00::1", false], ["fd12:3456::1", false], ["ff02::1", false],
    ["fec0::1", false], ["2001:db8::1", false], ["::ffff:127.0.0.1", false], ["::ffff:7f00:1", false], ["::ffff:10.1.2.3", false],
    ["::ffff:169.254.169.254", false], ["::127.0.0.1", false], ["64:ff9b::a00:1", false], ["2002:c0a8:0101::1", false],
    ["[::1]", false], ["not-an-ip", false], ["", false], ["1.2.3", false],
    // public
    ["8.8.8.8", true], ["1.1.1.1", true], ["93.184.216.34", true], ["::ffff:8.8.8.8", true], ["64:ff9b::808:808", true],
    ["2606:4700:4700::1111", true], ["2a00:1450:4001:80b::200e", true], ["2002:0808:0808::1", true],
  ];
  for (const [ip, expected] of table) {
    it(`${ip || "(empty)"} -> ${expected ? "public" : "refused"}`, () => assert.equal(isPublicAddress(ip), expected));
  }

  it("allowPrivateHosts matches a host, or a host and port", () => {
    assert.equal(isAllowedPrivateHost(new URL("http://127.0.0.1:8080/"), ["127.0.0.1"]), true);
    assert.equal(isAllowedPrivateHost(new URL("http://127.0.0.2:8080/"), ["127.0.0.1"]), false);
    assert.equal(isAllowedPrivateHost(new URL("http://127.0.0.1:8080/"), ["127.0.0.1:8080"]), true);
    assert.equal(isAllowedPrivateHost(new URL("http://127.0.0.1:9090/"), ["127.0.0.1:8080"]), false);
    assert.equal(isAllowedPrivateHost(new URL("http://[::1]:80/"), ["::1"]), true);
    assert.equal(isAllowedPrivateHost(new URL("http://Intranet.LAN/"), ["intranet.lan"]), true);
  });
});

describe("pinned connections", () => {
  it("connect to the checked address, not to what DNS says at connect time", async () => {
    const seenHosts: string[] = [];
    const server = createServer((req, res) => {
      seenHosts.push(String(req.headers.host));
      res.writeHead(200, { "content-type": "text/plain" }).end("pinned ok");
    });
    const port = await listen(server, "127.0.0.1");
    try {
      // "rebind.invalid" has no DNS answer at all: only the pinned lookup can make this connect
      const res = await requestOnce(new URL(`http://rebind.invalid:${port}/x`), { address: "127.0.0.1", family: 4 }, { maxBytes: 1024, signal: AbortSignal.timeout(5000) });
      assert.equal(res.status, 200);
      assert.equal(res.body.toString(), "pinned ok");
      assert.deepEqual(seenHosts, [`rebind.invalid:${port}`]);
    } finally {
      server.close();
    }
  });
});

describe("htmlToText", () => {
  it("keeps headings, paragraphs, list items and links; drops script, style and nav; decodes entities", () => {
    const { title, text } = htmlToText(`<!doctype html><html><head><title>T &amp; T</title><style>.x{color:red}</style>
      <script>var SECRET_SCRIPT = 1;</script></head><body><nav><a href="/home">NAVLINK</a></nav>
      <h1>Main   heading</h1><p>First &lt;para&gt; &#169; &#x263A; caf&eacute;</p><!-- COMMENT -->
      <ul><li>one</li><li>two <a href="/rel?a=1&amp;b=2">link text</a></li></ul><pre>  keep
    spaces</pre><script type="module">alert("SCRIPT2")</script><p>end</p></body></html>`, "http://example.com/dir/page");
    assert.equal(title, "T & T");
    assert.match(text, /^# Main heading$/m);
    assert.match(text, /First <para> © ☺ café/);
    assert.match(text, /^- one$/m);
    assert.match(text, /^- two link text \(http:\/\/example\.com\/rel\?a=1&b=2\)$/m);
    assert.match(text, /  keep\n    spaces/);
    for (const gone of ["SECRET_SCRIPT", "SCRIPT2", "NAVLINK", "color:red", "COMMENT"]) assert.ok(!text.includes(gone), gone);
  });
});

interface Fixture extends ToolsActorUnderTest {
  call(tool: string, args: Record<string, unknown>): Promise<ToolCallReply>;
}

async function startFixture(web: Record<string, unknown>): Promise<Fixture> {
  const ws = mkdtempSync(join(tmpdir(), "lurk-web-ws-"));
  const sut = await startToolsActor(ws, {
    agents: [{ id: "main", default: true, toolProfile: "full" }],
    tools: { outputCapBytes: CAP, timeoutMs: 15_000, web },
  });
  const { call } = toolCaller(() => sut.client);
  return {
    ...sut, call,
    async stop() {
      await sut.stop();
      rmSync(ws, { recursive: true, force: true });
    },
  };
}

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

const PAGE = `<!doctype html><html><head><title>Local page</title><script>window.SCRIPT_CONTENT_MARKER = "x";</script>
<style>body { STYLE_MARKER: 1 }</style></head><body><nav>NAV_MARKER</nav><h2>Readable heading</h2>
<p>Hello &amp; welcome to the <a href="/other">other page</a>.</p><ul><li>item one</li><li>item two</li></ul></body></html>`;

describe("web_fetch over the bus", () => {
  let fx: Fixture;
  let site: Server;
  let canary: Server;
  let sitePort = 0;
  let canaryPort = 0;
  let canaryConnections = 0;
  const searxRequests: IncomingMessage[] = [];

  before(async () => {
    canary = createServer((_req, res) => res.end("CANARY REACHED"));
    canary.on("connection", () => canaryConnections++);
    canaryPort = await listen(canary, "127.0.0.2");
    site = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const redirect = (to: string) => res.writeHead(302, { location: to }).end();
      switch (url.pathname) {
        case "/page": return res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
        case "/plain": return res.writeHead(200, { "content-type": "text/plain" }).end("just text\n");
        case "/hop": return redirect("/page");
        case "/to-canary": return redirect(`http://127.0.0.2:${canaryPort}/`);
        case "/chain3": return redirect("/chain2");
        case "/chain2": return redirect(`http://127.0.0.1:${sitePort}/chain1`);
        case "/chain1": return redirect(`http://127.0.0.2:${canaryPort}/pwned`);
        case "/to-metadata": return redirect("http://169.254.169.254/latest/meta-data/");
        case "/to-ten": return redirect("http://10.0.0.1/");
        case "/to-v6": return redirect(`http://[::1]:${canaryPort}/`);
        case "/to-mapped": return redirect(`http://[::ffff:127.0.0.2]:${canaryPort}/`);
        case "/to-localhost": return redirect(`http://localhost:${canaryPort}/`);
        case "/to-file": return redirect("file:///etc/passwd");
        case "/loop": return redirect("/loop");
        case "/image": return res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
        case "/big": return res.writeHead(200, { "content-type": "text/plain" }).end(`${"A".repeat(100_000)}TAIL_MARKER`);
        case "/long": return res.writeHead(200, { "content-type": "text/plain" }).end(`${Array.from({ length: 1200 }, (_, i) => `line ${i + 1}`).join("\n")}\nLONG_TAIL_MARKER\n`);
        case "/missing": return res.writeHead(404, { "content-type": "text/html" }).end("<p>not here</p>");
        case "/search": {
          searxRequests.push(req);
          return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
            results: [
              { title: "First <span>result</span>", url: "https://example.org/one", content: "Snippet &amp; one" },
              { title: "Second", url: "https://example.org/two", content: "two" },
              { title: "Third", url: "https://example.org/three", content: "three" },
            ],
          }));
        }
        default: return res.writeHead(404).end();
      }
    });
    sitePort = await listen(site, "127.0.0.1");
    fx = await startFixture({
      allowPrivateHosts: ["127.0.0.1"],
      maxBodyBytes: 16_384,
      search: { provider: "searxng", baseUrl: `http://127.0.0.1:${sitePort}` },
    });
  });
  after(async () => {
    await fx?.stop();
    site?.close();
    canary?.close();
  });

  const site_ = (path: string) => `http://127.0.0.1:${sitePort}${path}`;

  it("lists web_fetch and web_search in the catalog", async () => {
    const reply = await fx.client.call("tools", "list", { agentId: "main", sessionKey: "agent:main:main" });
    const names = reply.tools.map((t) => t.name);
    assert.ok(names.includes("web_fetch") && names.includes("web_search"), names.join(","));
    const fetchDef = reply.tools.find((t) => t.name === "web_fetch")!;
    assert.equal(fetchDef.sideEffects, false);
    assert.equal(fetchDef.parallelSafe, true);
    assert.deepEqual(fetchDef.groups, ["group:web"]);
  });

  it("fetches an HTML page as readable text, without script, style or nav", async () => {
    const reply = await fx.call("web_fetch", { url: site_("/page") });
    const text = textOf(reply);
    assert.equal(reply.isError, false, text);
    assert.match(text, new RegExp(`^URL: http://127\\.0\\.0\\.1:${sitePort}/page$`, "m"));
    assert.match(text, /^Content-Type: text\/html; charset=utf-8$/m);
    assert.match(text, /^Title: Local page$/m);
    assert.match(text, /^## Readable heading$/m);
    assert.match(text, new RegExp(`Hello & welcome to the other page \\(http://127\\.0\\.0\\.1:${sitePort}/other\\)\\.`));
    assert.match(text, /^- item two$/m);
    for (const gone of ["SCRIPT_CONTENT_MARKER", "STYLE_MARKER", "NAV_MARKER", "<p>"]) assert.ok(!text.includes(gone), gone);
  });

  it("returns text types as they are and follows a redirect on an allowed host", async () => {
    assert.match(textOf(await fx.call("web_fetch", { url: site_("/plain") })), /just text/);
    const text = textOf(await fx.call("web_fetch", { url: site_("/hop") }));
    assert.match(text, new RegExp(`^URL: http://127\\.0\\.0\\.1:${sitePort}/page$`, "m"));
    assert.match(text, /Redirected from: .*\/hop \(1 redirect\)/);
    assert.match(text, /Readable heading/);
  });

  it("refuses redirects to private addresses without connecting to them", async () => {
    for (const path of ["/to-canary", "/chain3", "/to-metadata", "/to-ten", "/to-v6", "/to-mapped", "/to-localhost"]) {
      const reply = await fx.call("web_fetch", { url: site_(path) });
      const text = textOf(reply);
      assert.equal(reply.isError, true, `${path}: ${text}`);
      assert.equal(reply.errorCode, "FORBIDDEN", `${path}: ${text}`);
      assert.match(text, /refused to fetch/, path);
      assert.ok(!text.includes("CANARY"), path);
    }
    assert.equal(canaryConnections, 0, "the private target must never see a connection");
  });

  it("refuses a private address that is not allowed, given directly", async () => {
    for (const url of [`http://127.0.0.2:${canaryPort}/`, `http://localhost:${canaryPort}/`, `http://[::1]:${canaryPort}/`, `http://0x7f.0.0.2:${canaryPort}/`]) {
      const reply = await fx.call("web_fetch", { url });
      assert.equal(reply.errorCode, "FORBIDDEN", `${url}: ${textOf(reply)}`);
    }
    assert.equal(canaryConnections, 0);
  });

  it("refuses other schemes, redirects to them, and redirect loops", async () => {
    for (const url of ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/", "javascript:alert(1)", "not a url"]) {
      const reply = await fx.call("web_fetch", { url });
      assert.equal(reply.errorCode, "TOOL_INVALID_ARGS", `${url}: ${textOf(reply)}`);
    }
    const viaRedirect = await fx.call("web_fetch", { url: site_("/to-file") });
    assert.equal(viaRedirect.errorCode, "FORBIDDEN", textOf(viaRedirect));
    assert.match(textOf(viaRedirect), /file: scheme is not supported/);
    const loop = await fx.call("web_fetch", { url: site_("/loop") });
    assert.equal(loop.errorCode, "LIMIT_EXCEEDED", textOf(loop));
    assert.match(textOf(loop), /too many redirects \(more than 5\)/);
  });

  it("refuses binary content and reports HTTP errors", async () => {
    const image = await fx.call("web_fetch", { url: site_("/image") });
    assert.equal(image.isError, true);
    assert.match(textOf(image), /image\/png .*not text/);
    const missing = await fx.call("web_fetch", { url: site_("/missing") });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /^Status: 404$/m);
    assert.match(textOf(missing), /not here/);
  });

  it("caps the body at tools.web.maxBodyBytes and the text at maxChars and the output cap", async () => {
    const big = textOf(await fx.call("web_fetch", { url: site_("/big") }));
    assert.ok(!big.includes("TAIL_MARKER"));
    assert.match(big, /the body was cut at 16384 bytes/);
    assert.ok(Buffer.byteLength(big, "utf8") <= CAP + 1024, `${Buffer.byteLength(big, "utf8")} bytes`);
    assert.match(big, /text cut at 8192 bytes of output/);
    const small = textOf(await fx.call("web_fetch", { url: site_("/big"), maxChars: 500 }));
    assert.match(small, /A{500}\n\n\[/);
    assert.ok(!small.includes("A".repeat(501)));
    assert.match(small, /text cut at 500 of 16384 characters/);
  });

  it("keeps the whole text of a page cut at the output cap, and read pages past the cap", async () => {
    const reply = await fx.call("web_fetch", { url: site_("/long") });
    assert.equal(reply.isError, false, textOf(reply));
    const shown = textOf(reply);
    assert.ok(!shown.includes("LONG_TAIL_MARKER"), "the tail is past the cap");
    assert.ok(Buffer.byteLength(shown, "utf8") <= CAP + 1024);
    const path = reply.truncated?.fullOutputPath;
    assert.ok(path, "the reply names the saved full text");
    assert.match(path, /^\.lurkbot\/outputs\/.+\.txt$/);
    assert.ok(shown.includes(path), "the note tells the model where it is");
    assert.ok((reply.truncated?.totalBytes ?? 0) > CAP);
    const tail = await fx.call("read", { path, offset: 1195 });
    assert.equal(tail.isError, false, textOf(tail));
    assert.match(textOf(tail), /line 1200\n\s*1201\tLONG_TAIL_MARKER/);
  });

  it("web_search (SearXNG) returns the parsed results", async () => {
    const reply = await fx.call("web_search", { query: "lurk bot", count: 2 });
    const text = textOf(reply);
    assert.equal(reply.isError, false, text);
    assert.equal(text, 'Results for "lurk bot":\n1. First result\n   https://example.org/one\n   Snippet & one\n2. Second\n   https://example.org/two\n   two');
    const req = searxRequests.at(-1)!;
    const url = new URL(req.url!, "http://x");
    assert.equal(url.searchParams.get("q"), "lurk bot");
    assert.equal(url.searchParams.get("format"), "json");
  });
});

describe("web_search with Brave and with no provider", () => {
  let brave: Server;
  let bravePort = 0;
  const seen: Array<{ path: string; token: string | undefined; q: string | null; count: string | null }> = [];
  let braveFx: Fixture;
  let noneFx: Fixture;

  before(async () => {
    brave = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const token = req.headers["x-subscription-token"] as string | undefined;
      seen.push({ path: url.pathname, token, q: url.searchParams.get("q"), count: url.searchParams.get("count") });
      if (url.searchParams.get("q") === "fail") return res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: `bad token ${token}` }));
      if (url.pathname !== "/res/v1/web/search" || token !== BRAVE_KEY) return res.writeHead(403).end();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        query: { original: url.searchParams.get("q") },
        web: { results: [{ title: "Brave <strong>hit</strong>", url: "https://example.net/b", description: "About <strong>it</strong> &quot;quoted&quot;" }] },
      }));
    });
    bravePort = await listen(brave, "127.0.0.1");
    braveFx = await startFixture({ search: { provider: "brave", apiKey: BRAVE_KEY, baseUrl: `http://127.0.0.1:${bravePort}` } });
    noneFx = await startFixture({});
  });
  after(async () => {
    await braveFx?.stop();
    await noneFx?.stop();
    brave?.close();
  });

  it("calls the Brave API with the key in X-Subscription-Token and never shows the key", async () => {
    const reply = await braveFx.call("web_search", { query: "what is nats", count: 3 });
    const text = textOf(reply);
    assert.equal(reply.isError, false, text);
    assert.equal(text, 'Results for "what is nats":\n1. Brave hit\n   https://example.net/b\n   About it "quoted"');
    assert.deepEqual(seen.at(-1), { path: "/res/v1/web/search", token: BRAVE_KEY, q: "what is nats", count: "3" });
    const failed = await braveFx.call("web_search", { query: "fail" });
    assert.equal(failed.isError, true);
    assert.match(textOf(failed), /HTTP 401 \(check the API key\)/);
    for (const r of [reply, failed]) assert.ok(!JSON.stringify(r).includes(BRAVE_KEY));
    assert.ok(!braveFx.tools.output().includes(BRAVE_KEY), "the key must not be logged");
  });

  it("web_fetch refuses loopback when allowPrivateHosts is empty (the default)", async () => {
    const reply = await noneFx.call("web_fetch", { url: `http://127.0.0.1:${bravePort}/res/v1/web/search` });
    assert.equal(reply.errorCode, "FORBIDDEN", textOf(reply));
  });

  it("with provider none, web_search explains how to configure one", async () => {
    const reply = await noneFx.call("web_search", { query: "anything" });
    assert.equal(reply.isError, true);
    assert.equal(reply.errorCode, "TOOL_FAILED");
    assert.match(textOf(reply), /web_search is not configured/);
    assert.match(textOf(reply), /tools\.web\.search/);
  });
});
