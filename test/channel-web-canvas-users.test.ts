/**
 * The canvas with several web users (channels.web.users) and `channels.web.canvas.allowScripts`
 * on, against the whole system (real nats-server, every actor a process, the fake LLM): one
 * user's canvas never reaches another user's sockets and another user's presses are refused;
 * a canvas web image is loaded by the channel (public-address rule, tools.web.allowPrivateHosts
 * as its exceptions); in Debian's chromium (skipped when /usr/bin/chromium is missing): with
 * scripts on, presented HTML's script runs, fetch and the chat page stay closed to it, and WebRTC
 * does reach the network (the documented caveat of the setting); a clicked image shows from a
 * blob: URL. Canvas media fetches are capped (2 at once per user, 4 in all): more get 429 while the
 * others complete.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { chromium, type Browser } from "playwright-core";
import { WebSocket } from "ws";
import { subjects, toolCallReply, type ToolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { WebClient, type Frame } from "./harness/web-client.js";
import { flatImage } from "./harness/images.js";
import { freePort } from "./harness/nats.js";
import { leakyHtml, netSink } from "./harness/net-sink.js";
import { TestSystem } from "./harness/system.js";
import { textOf } from "./harness/tools-actor.js";

const CHROMIUM = "/usr/bin/chromium";
const ALICE = { id: "alice", name: "Alice", token: "alice-canvas-token-0123456789" };
const BOB = { id: "bob", token: "bob-canvas-token-0123456789-xyz" };
const DAVE = { id: "dave", token: "dave-canvas-token-0123456789-abc" };
const S = subjects();



const line = (o: object) => JSON.stringify(o);
const buttonJsonl = (title: string) => [
  line({ surfaceUpdate: { surfaceId: "main", components: [
    { id: "root", component: { Column: { children: { explicitList: ["title", "go"] } } } },
    { id: "title", component: { Text: { text: { literalString: title } } } },
    { id: "go", component: { Button: { child: "go-text", action: { name: "go" } } } },
    { id: "go-text", component: { Text: { text: { literalString: "Go" } } } },
  ] } }),
].join("\n");
const imageJsonl = (url: string) => line({ surfaceUpdate: { surfaceId: "pics", components: [{ id: "root", component: { Image: { url: { literalString: url } } } }] } });

describe("web channel canvas with several users and scripts on", () => {
  let system: TestSystem;
  let port: number;
  let runner: NatsConnection;
  let images: Server;
  let imagePort = 0;
  const imageRequests: Array<{ path: string; headers: Record<string, unknown> }> = [];
  let png: Buffer;
  let n = 0;
  /** `/slow.png` answers held until `slowOpen` (then at once) */
  const slowHeld: Array<() => void> = [];
  let slowOpen = false;

  const call = (args: Record<string, unknown>, sessionKey: string): Promise<ToolCallReply> =>
    new BusClient(runner).callSubject(S.toolCall("canvas"), "lurk.tools.call.v1", {
      toolCallId: `cvu-${++n}`, runId: `run-canvas-users-${n}`, sessionKey, agentId: "main", tool: "canvas", args,
    }, toolCallReply, { timeoutMs: 20_000 });
  const ok = async (args: Record<string, unknown>, sessionKey: string) => {
    const reply = await call(args, sessionKey);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  };
  const image = (token: string, chat: string, url: string) =>
    fetch(`http://127.0.0.1:${port}/api/canvas/image?chat=${chat}&url=${encodeURIComponent(url)}`, { headers: { authorization: `Bearer ${token}` } });

  before(async () => {
    png = await flatImage(12, 8).png().toBuffer();
    images = createServer((req, res) => {
      imageRequests.push({ path: req.url ?? "", headers: req.headers });
      if (req.url === "/pic.png") return void res.writeHead(200, { "content-type": "image/png" }).end(png);
      if (req.url === "/to-localhost") return void res.writeHead(302, { location: `http://localhost:${imagePort}/pic.png` }).end();
      if (req.url === "/to-pic") return void res.writeHead(302, { location: "/pic.png" }).end();
      if (req.url === "/slow.png") {
        const answer = () => void res.writeHead(200, { "content-type": "image/png" }).end(png);
        return void (slowOpen ? answer() : slowHeld.push(answer));
      }
      res.writeHead(200, { "content-type": "text/html" }).end("<p>not an image</p>");
    });
    await new Promise<void>((resolve) => images.listen(0, "127.0.0.1", resolve));
    imagePort = (images.address() as { port: number }).port;
    port = await freePort();
    system = await TestSystem.start({ config: {
      agents: [{ id: "main", default: true, toolProfile: "coding" }],
      tools: { web: { allowPrivateHosts: [`127.0.0.1:${imagePort}`] } },
      channels: { web: { enabled: true, port, users: [ALICE, BOB, DAVE], canvas: { allowScripts: true } } },
    } });
    await system.startActor("channel-web");
    runner = await system.nats.connect("agent-runner");
  });
  after(async () => {
    await runner?.close();
    await system?.stop();
    await new Promise<void>((resolve) => images?.close(() => resolve()));
  });

  it("one user's canvas never reaches another user; another user's presses are refused", async () => {
    const alice = await WebClient.open(port, ALICE.token, "chat-a");
    const aliceMain = await WebClient.open(port, ALICE.token, "main");
    const bob = await WebClient.open(port, BOB.token, "chat-a");
    const bobMain = await WebClient.open(port, BOB.token, "main");
    assert.match(await ok({ action: "a2ui_push", jsonl: buttonJsonl("Alice's chat") }, "agent:main:web:dm:alice+chat-a"), /shown on 1 open web page/);
    assert.match(await ok({ action: "a2ui_push", jsonl: buttonJsonl("Alice's main") }, "agent:main:web:dm:alice"), /shown on 1 open web page/);
    await alice.next((f) => f.type === "canvas" && f.canvas?.surfaces?.main, "alice's chat canvas");
    await aliceMain.next((f) => f.type === "canvas" && f.canvas?.surfaces?.main, "alice's main canvas");
    assert.equal(textOf(await call({ action: "snapshot" }, "agent:main:web:dm:carol")).match(/only in the web chat/)?.length, 1, "no configured user: no canvas");

    // bob's chats of the same names are his own: his presses on alice's buttons are refused
    for (const [c, chat] of [[bob, "chat-a"], [bobMain, "main"]] as const) {
      const id = randomUUID();
      c.send({ type: "canvas_action", id, chat, surfaceId: "main", sourceComponentId: "go", name: "go", context: {} });
      const answer = await c.next((f) => (f.type === "nack" || f.type === "ack") && f.id === id, `bob's press in ${chat}`);
      assert.equal(answer.type, "nack");
      assert.match(answer.message, /the canvas has no button "go"/);
    }
    // alice's chat by its bus name is no chat id bob can send
    const sneaky = randomUUID();
    bob.send({ type: "canvas_action", id: sneaky, chat: "alice+chat-a", surfaceId: "main", sourceComponentId: "go", name: "go", context: {} });
    assert.equal((await bob.next((f) => f.type === "error", "the refused frame")).code, "VALIDATION_FAILED");
    // a socket opened later sees nothing of alice's either
    const bobLater = await WebClient.open(port, BOB.token, "chat-a");
    await ok({ action: "present", html: "<!doctype html><p>for alice</p>" }, "agent:main:web:dm:alice+chat-a");
    await alice.next((f) => f.type === "canvas" && f.canvas?.view === "html", "alice's presented html");
    await new Promise((r) => setTimeout(r, 500));
    for (const c of [bob, bobMain, bobLater]) {
      assert.deepEqual(c.frames.filter((f) => f.type === "canvas").map((f) => f.canvas), [null], "bob got no canvas of alice's");
      assert.ok(!JSON.stringify(c.frames).includes("Alice's"));
    }
    // and none of alice's canvas images
    await ok({ action: "a2ui_push", jsonl: imageJsonl(`http://127.0.0.1:${imagePort}/pic.png`) }, "agent:main:web:dm:alice+chat-a");
    assert.equal((await image(BOB.token, "chat-a", `http://127.0.0.1:${imagePort}/pic.png`)).status, 404);
    assert.equal((await image(ALICE.token, "chat-a", `http://127.0.0.1:${imagePort}/pic.png`)).status, 200);

    // alice's own press goes through
    system.fake.enqueue({ kind: "text", text: "went" });
    await ok({ action: "a2ui_push", jsonl: buttonJsonl("Alice's chat") }, "agent:main:web:dm:alice+chat-a");
    const press = randomUUID();
    alice.send({ type: "canvas_action", id: press, chat: "chat-a", surfaceId: "main", sourceComponentId: "go", name: "go", context: {} });
    assert.equal((await alice.next((f) => (f.type === "nack" || f.type === "ack") && f.id === press, "alice's press")).type, "ack");
    await alice.next((f) => f.type === "entry" && f.entry.text === "went", "the answer to alice's press");
    assert.ok(!JSON.stringify(bob.frames).includes("went"));
    for (const c of [alice, aliceMain, bob, bobMain, bobLater]) c.close();
  });

  it("loads a web image the canvas shows through the channel: allowed private hosts only, images only, redirects checked", async () => {
    const chat = "chat-pics";
    const key = `agent:main:web:dm:alice+${chat}`;
    const urls = {
      pic: `http://127.0.0.1:${imagePort}/pic.png`,
      html: `http://127.0.0.1:${imagePort}/page.html`,
      viaRedirect: `http://127.0.0.1:${imagePort}/to-pic`,
      toLocalhost: `http://127.0.0.1:${imagePort}/to-localhost`,
      localhost: `http://localhost:${imagePort}/pic.png`,
    };
    await ok({ action: "a2ui_push", jsonl: [
      line({ surfaceUpdate: { surfaceId: "pics", components: [{ id: "root", component: { Column: { children: { explicitList: ["a", "b"] } } } },
        { id: "a", component: { Image: { url: { literalString: urls.pic } } } }, { id: "b", component: { Image: { url: { path: "/more" } } } }] } }),
      // URLs in the data model count too (an Image bound by path)
      line({ dataModelUpdate: { surfaceId: "pics", contents: [{ key: "list", valueMap: Object.entries(urls).map(([k, v]) => ({ key: k, valueString: v })) }] } }),
    ].join("\n") }, key);
    const before = imageRequests.length;
    const got = await image(ALICE.token, chat, urls.pic);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get("content-type"), "image/png");
    assert.equal(got.headers.get("x-content-type-options"), "nosniff");
    assert.deepEqual(Buffer.from(await got.arrayBuffer()), png);
    const asked = imageRequests[before]!;
    assert.equal(asked.headers.authorization, undefined, "no token goes to the image's host");
    assert.equal(asked.headers.cookie, undefined);
    assert.match(String(asked.headers["user-agent"]), /LurkBot/);
    assert.equal((await image(ALICE.token, chat, urls.viaRedirect)).status, 200, "a redirect to an allowed address is followed");
    const notImage = await image(ALICE.token, chat, urls.html);
    assert.equal(notImage.status, 502);
    assert.match(((await notImage.json()) as { error: { message: string } }).error.message, /not a PNG, JPEG, GIF or WebP image/);
    assert.equal((await image(ALICE.token, chat, urls.localhost)).status, 403, "localhost is not in tools.web.allowPrivateHosts");
    assert.equal((await image(ALICE.token, chat, urls.toLocalhost)).status, 403, "every redirect hop is checked");
    assert.equal((await image(ALICE.token, chat, `http://127.0.0.1:${imagePort}/other.png`)).status, 404, "not on the canvas");
  });

  it("at most 2 canvas media fetches at once per user and 4 in all: more get 429 (nothing fetched) while the others complete; the slots come back", async () => {
    const slow = `http://127.0.0.1:${imagePort}/slow.png`;
    for (const user of ["alice", "bob", "dave"]) await ok({ action: "a2ui_push", jsonl: imageJsonl(slow) }, `agent:main:web:dm:${user}+busy`);
    const slowAsked = () => imageRequests.filter((r) => r.path === "/slow.png").length;
    const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;

    const alice = [image(ALICE.token, "busy", slow), image(ALICE.token, "busy", slow)];
    await waitFor(() => slowHeld.length === 2, 10_000, "alice's two fetches at the slow host");
    const aliceThird = await image(ALICE.token, "busy", slow);
    assert.equal(aliceThird.status, 429);
    assert.equal(aliceThird.headers.get("retry-after"), "1");
    const perUser = await errorOf(aliceThird);
    assert.equal(perUser.code, "LIMIT_EXCEEDED");
    assert.match(perUser.message, /you are loading 2 canvas images, videos or audio files already \(at most 2 at once per user\): wait for one to finish/);

    const bob = [image(BOB.token, "busy", slow), image(BOB.token, "busy", slow)];
    await waitFor(() => slowHeld.length === 4, 10_000, "bob's two fetches at the slow host");
    const daveFirst = await image(DAVE.token, "busy", slow);
    assert.equal(daveFirst.status, 429, "4 in all: another user waits too");
    assert.match((await errorOf(daveFirst)).message, /the web channel is loading 4 canvas images, videos or audio files already \(at most 4 at once\)/);
    assert.equal(slowAsked(), 4, "a refused fetch reaches no host");

    slowOpen = true;
    for (const answer of slowHeld.splice(0)) answer();
    for (const got of await Promise.all([...alice, ...bob])) {
      assert.equal(got.status, 200);
      assert.deepEqual(Buffer.from(await got.arrayBuffer()), png);
    }
    const daveAgain = await image(DAVE.token, "busy", slow);
    assert.equal(daveAgain.status, 200, "the slots were given back");
    assert.deepEqual(Buffer.from(await daveAgain.arrayBuffer()), png);
  });

  it("in a real browser, with allowScripts: the frame's script runs, fetch and the page stay closed, WebRTC reaches the network (the caveat); a clicked image loads through the channel", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    let browser: Browser | undefined;
    const sink = await netSink();
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`http://127.0.0.1:${port}/?token=${ALICE.token}`);
      await page.locator("#status.online").waitFor({ timeout: 10_000 });

      // a clicked web image: fetched by the channel, shown from a blob: URL
      await ok({ action: "a2ui_push", jsonl: imageJsonl(`http://127.0.0.1:${imagePort}/pic.png`) }, "agent:main:web:dm:alice");
      const load = page.locator("#canvas button.a2-load");
      assert.equal(await load.textContent({ timeout: 10_000 }), `Load image from 127.0.0.1:${imagePort}`);
      const before = imageRequests.length;
      await load.click();
      const img = page.locator("#canvas .a2-image img");
      await img.waitFor({ timeout: 10_000 });
      assert.match(await img.getAttribute("src") ?? "", /^blob:/);
      await waitFor(async () => (await img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)) === 12 || undefined, 10_000, "the image decoded");
      assert.equal(imageRequests.length, before + 1);
      assert.match(String(imageRequests[before]!.headers["user-agent"]), /LurkBot/, "the channel fetched it, not the browser");

      await ok({ action: "present", html: leakyHtml(sink, false), title: "Scripts on" }, "agent:main:web:dm:alice");
      const frame = page.frameLocator("#canvas-body iframe");
      await frame.locator("h1", { hasText: "from script" }).waitFor({ timeout: 10_000 });
      await frame.locator("body[data-net]").waitFor({ timeout: 10_000 });
      assert.equal(await page.locator("#canvas-body iframe").getAttribute("sandbox"), "allow-scripts");
      assert.equal(await frame.locator("body").getAttribute("data-net"), "blocked", "CSP stops fetch");
      assert.equal(await frame.locator("body").getAttribute("data-parent"), "denied", "the opaque origin cannot reach the chat page");
      assert.equal(await frame.locator("body").getAttribute("data-rtc"), "tried");
      // what CSP does not govern: WebRTC's STUN packets leave the browser (why allowScripts is off by default)
      await waitFor(() => sink.udp > 0 || undefined, 10_000, "a STUN packet from the frame's script");
      assert.equal(sink.tcp, 0, "no TCP connection: images, styles, fetch and preconnect stay blocked");
      assert.deepEqual(errors, []);
    } finally {
      await browser?.close();
      await sink.close();
    }
  });
});
