/**
 * The canvas (services/channel-web canvas-*.ts, a2ui-schema.ts, page-canvas.ts) against the whole
 * system (real nats-server, every actor a process, the fake LLM): the `canvas` tool called as the
 * agent-runner calls tools and by the agent itself in a run; the page's protocol with a `ws`
 * client (the `canvas` frames, `canvas_action` becoming a message the agent answers); the
 * presented frame's sandbox; web images, video and audio loaded by the channel under the
 * public-address rule; a restart of the web channel; then the page in Debian's chromium
 * (skipped only when /usr/bin/chromium is missing): the form, presented HTML, and the other v0.8
 * components (Icon, Tabs, Modal, Slider, MultipleChoice, DateTimeInput, Video, AudioPlayer) whose
 * values a Button sends.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { chromium, type Browser } from "playwright-core";
import { WebSocket } from "ws";
import { subjects, toolCallReply, toolsListReply, type ToolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { lastWebInbound, WebClient, type Frame } from "./harness/web-client.js";
import { freePort } from "./harness/nats.js";
import { netSink, leakyHtml } from "./harness/net-sink.js";
import { TestSystem } from "./harness/system.js";
import { textOf } from "./harness/tools-actor.js";
import { messageText } from "./fakes/openai-server.js";

const TOKEN = "test-web-token-canvas-0123456789";
const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(process.cwd(), "test", "artifacts", "web");
const S = subjects();



const line = (o: object) => JSON.stringify(o);
const text = (id: string, literal: string, usageHint?: string) => ({ id, component: { Text: { text: { literalString: literal }, ...(usageHint ? { usageHint } : {}) } } });
/** a small form: a title bound to /title, a name field, a checkbox and a submit button whose context reads both */
function formJsonl(title = "Sign up"): string {
  return [
    line({ surfaceUpdate: { surfaceId: "main", components: [
      { id: "root", component: { Column: { children: { explicitList: ["title", "name", "agree", "submit", "raw"] } } } },
      { id: "title", component: { Text: { text: { path: "/title" }, usageHint: "h2" } } },
      { id: "name", component: { TextField: { label: { literalString: "Your name" }, text: { path: "/form/name" } } } },
      { id: "agree", component: { CheckBox: { label: { literalString: "I agree" }, value: { path: "/form/agree" } } } },
      { id: "submit", component: { Button: { child: "submit-text", primary: true, action: { name: "submit_form", context: [{ key: "name", value: { path: "/form/name" } }, { key: "agree", value: { path: "/form/agree" } }] } } } },
      text("submit-text", "Send"),
      text("raw", "<b>not bold</b>"),
    ] } }),
    line({ dataModelUpdate: { surfaceId: "main", contents: [{ key: "title", valueString: title }, { key: "form", valueMap: [{ key: "name", valueString: "" }, { key: "agree", valueBoolean: false }] }] } }),
    line({ beginRendering: { surfaceId: "main", root: "root" } }),
  ].join("\n");
}

/**
 * one of each component the canvas added to the form's: Tabs ("Order": an Icon, a Slider, chips of a
 * MultipleChoice, a DateTimeInput, a Modal opened by a Button; "Media": a Video and an AudioPlayer
 * whose url is bound), and a Button whose context reads the inputs' paths
 */
function widgetsJsonl(media: string): string {
  return [
    line({ surfaceUpdate: { surfaceId: "w", components: [
      { id: "root", component: { Column: { children: { explicitList: ["tabs", "book"] } } } },
      { id: "tabs", component: { Tabs: { tabItems: [{ title: { literalString: "Order" }, child: "order" }, { title: { path: "/labels/media" }, child: "media" }] } } },
      { id: "order", component: { Column: { children: { explicitList: ["star", "volume", "toppings", "when", "details"] } } } },
      { id: "star", component: { Icon: { name: { literalString: "star" } } } },
      { id: "volume", component: { Slider: { value: { path: "/order/volume" }, minValue: 0, maxValue: 10 } } },
      { id: "toppings", component: { MultipleChoice: { selections: { path: "/order/toppings" }, maxAllowedSelections: 2, type: "chips", options: [
        { label: { literalString: "Ham" }, value: "ham" }, { label: { literalString: "Olives" }, value: "olives" }, { label: { literalString: "<i>Pineapple</i>" }, value: "pineapple" },
      ] } } },
      { id: "when", component: { DateTimeInput: { value: { path: "/order/when" }, enableDate: true, enableTime: true } } },
      { id: "details", component: { Modal: { entryPointChild: "open", contentChild: "terms" } } },
      { id: "open", component: { Button: { child: "open-text", action: { name: "never_sent" } } } },
      text("open-text", "Details"),
      text("terms", "Delivery takes 30 minutes"),
      { id: "media", component: { Column: { children: { explicitList: ["clip", "song"] } } } },
      { id: "clip", component: { Video: { url: { literalString: `${media}/clip.webm` } } } },
      { id: "song", component: { AudioPlayer: { url: { path: "/songUrl" }, description: { literalString: "Theme tune" } } } },
      { id: "book", component: { Button: { child: "book-text", primary: true, action: { name: "book", context: [
        { key: "volume", value: { path: "/order/volume" } }, { key: "toppings", value: { path: "/order/toppings" } }, { key: "when", value: { path: "/order/when" } }, { key: "via", value: { literalString: "canvas" } },
      ] } } } },
      text("book-text", "Book"),
    ] } }),
    line({ dataModelUpdate: { surfaceId: "w", contents: [
      { key: "order", valueMap: [{ key: "volume", valueNumber: 3 }, { key: "toppings", valueMap: [{ key: "0", valueString: "ham" }] }, { key: "when", valueString: "2026-12-01T18:30" }] },
      { key: "songUrl", valueString: `${media}/song.mp3` }, { key: "labels", valueMap: [{ key: "media", valueString: "Media" }] },
    ] } }),
    line({ beginRendering: { surfaceId: "w", root: "root" } }),
  ].join("\n");
}
/** what the tests read of a <video> or <audio> element (the tests have no DOM types) */
interface MediaState { controls: boolean; autoplay: boolean; preload: string; paused: boolean; src: string }
const WIDGET_IDS = ["book", "book-text", "clip", "details", "media", "open", "open-text", "order", "root", "song", "star", "tabs", "terms", "toppings", "volume", "when"];

/** ids named like Object.prototype's members: ordinary ids for A2UI, never inherited lookups */
function protoJsonl(): string {
  return [
    line({ surfaceUpdate: { surfaceId: "toString", components: [
      { id: "toString", component: { Column: { children: { explicitList: ["valueOf", "hasOwnProperty"] } } } },
      { id: "valueOf", component: { Text: { text: { path: "/valueOf/toString/hasOwnProperty" } } } },
      { id: "hasOwnProperty", component: { Button: { child: "label", action: { name: "press", context: [{ key: "v", value: { path: "/valueOf/toString/hasOwnProperty" } }] } } } },
      text("label", "Press"),
    ] } }),
    line({ dataModelUpdate: { surfaceId: "toString", path: "/valueOf/toString", contents: [{ key: "hasOwnProperty", valueString: "deep value" }] } }),
    line({ dataModelUpdate: { surfaceId: "hasOwnProperty", contents: [{ key: "toString", valueString: "kept" }] } }),
    line({ beginRendering: { surfaceId: "toString", root: "toString" } }),
    // a surface whose root names an inherited member but no component of its own: not shown
    line({ beginRendering: { surfaceId: "valueOf", root: "toString" } }),
  ].join("\n");
}

describe("web channel canvas", () => {
  let system: TestSystem;
  let port: number;
  let runner: NatsConnection;
  let n = 0;
  // a web host the config allows (tools.web.allowPrivateHosts) for canvas video and audio
  let mediaSite: Server;
  let media = "";
  const mediaRequests: string[] = [];

  const call = (args: Record<string, unknown>, sessionKey = "agent:main:web:dm:chat-canvas", extra: Record<string, unknown> = {}): Promise<ToolCallReply> =>
    new BusClient(runner).callSubject(S.toolCall("canvas"), "lurk.tools.call.v1", {
      toolCallId: `cv-${++n}`, runId: `run-canvas-${n}`, sessionKey, agentId: "main", tool: "canvas", args, ...extra,
    }, toolCallReply, { timeoutMs: 20_000 });
  const ok = async (args: Record<string, unknown>, sessionKey?: string) => {
    const reply = await call(args, sessionKey);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  };
  const snapshot = async (sessionKey?: string) => JSON.parse(await ok({ action: "snapshot" }, sessionKey)) as Record<string, any>;


  before(async () => {
    mediaSite = createServer((req, res) => {
      mediaRequests.push(req.url ?? "");
      if (req.url === "/clip.webm") return void res.writeHead(200, { "content-type": "video/webm" }).end(Buffer.from("not really a webm"));
      if (req.url === "/song.mp3") return void res.writeHead(200, { "content-type": "audio/mpeg" }).end(Buffer.from("ID3 not really an mp3"));
      res.writeHead(200, { "content-type": "text/html" }).end("<p>not a video</p>");
    });
    await new Promise<void>((resolve) => mediaSite.listen(0, "127.0.0.1", resolve));
    const mediaHost = `127.0.0.1:${(mediaSite.address() as { port: number }).port}`;
    media = `http://${mediaHost}`;
    port = await freePort();
    system = await TestSystem.start({ config: {
      agents: [{ id: "main", default: true, toolProfile: "coding" }, { id: "chatty", toolProfile: "messaging" }],
      channels: { web: { enabled: true, port, token: TOKEN } },
      tools: { web: { allowPrivateHosts: [mediaHost] } },
    } });
    await system.startActor("channel-web");
    runner = await system.nats.connect("agent-runner");
  });
  after(async () => {
    await runner?.close();
    await system?.stop();
    await new Promise((resolve) => mediaSite?.close(resolve));
  });
  beforeEach(() => system.fake.reset());

  it("is served by the web channel, only to sessions a web chat shows, under the layered tool policy", async () => {
    const list = async (body: Record<string, unknown>) => {
      const tools = new Map<string, string>();
      const replies = await runner.requestMany("lurk.tools.list", JSON.stringify({ type: "lurk.tools.list.v1", id: randomUUID(), ts: Date.now(), ...body }), { strategy: "timer", maxWait: 500 });
      for await (const msg of replies) for (const t of toolsListReply.parse(msg.json()).tools) tools.set(t.name, t.actor);
      return tools;
    };
    assert.equal((await list({ agentId: "main", sessionKey: "agent:main:web:dm:chat-canvas" })).get("canvas"), "channel-web");
    assert.equal((await list({ agentId: "main", sessionKey: "agent:main:main" })).get("canvas"), "channel-web", "the main session is the web user's main chat");
    const telegram = await list({ agentId: "main", sessionKey: "agent:main:telegram:dm:555" });
    assert.ok(telegram.has("read") && !telegram.has("canvas"), "no web chat shows a telegram DM");
    assert.ok(!(await list({ agentId: "main", sessionKey: "agent:main:web:group:x" })).has("canvas"));
    assert.ok(!(await list({ agentId: "main", sessionKey: "agent:main:main", model: "ollama/llama3" })).has("canvas"), "the built-in provider rule: no canvas for ollama");
    assert.ok(!(await list({ agentId: "chatty", sessionKey: "agent:chatty:main" })).has("canvas"), "not in the messaging profile");

    const denied = await call({ action: "snapshot" }, "agent:main:telegram:dm:555");
    assert.equal(denied.errorCode, "TOOL_DENIED");
    assert.match(textOf(denied), /only in the web chat/);
  });

  it("a2ui_push validates and stores; the open page gets the surface; snapshot returns it", async () => {
    const c = await WebClient.open(port, TOKEN, "chat-canvas");
    const first = c.frames.find((f) => f.type === "canvas")!;
    assert.equal(first.canvas, null, "no canvas yet");
    const seen = c.frames.length;
    const result = await ok({ action: "a2ui_push", jsonl: formJsonl() });
    assert.match(result, /^pushed 3 messages \(rev 1\); surface "main": 7 components, shown from "root"; shown on 1 open web page\./);
    const frame = await c.canvasAfter(seen, "the pushed canvas");
    assert.equal(frame.chat, "chat-canvas");
    assert.equal(frame.canvas.visible, true);
    assert.equal(frame.canvas.view, "a2ui");
    const surface = frame.canvas.surfaces.main;
    assert.equal(surface.shownRoot, "root");
    assert.deepEqual(surface.data, { title: "Sign up", form: { name: "", agree: false } });
    assert.deepEqual(Object.keys(surface.components).sort(), ["agree", "name", "raw", "root", "submit", "submit-text", "title"]);

    // a data update at a path keeps the rest of the model
    await ok({ action: "a2ui_push", jsonl: line({ dataModelUpdate: { surfaceId: "main", path: "/form", contents: [{ key: "name", valueString: "Ada" }] } }) });
    const snap = await snapshot();
    assert.equal(snap.rev, 2);
    assert.equal(snap.visible, true);
    assert.deepEqual(snap.surfaces.main.dataModel, { title: "Sign up", form: { name: "Ada", agree: false } });
    assert.equal(snap.surfaces.main.rendering, true);
    assert.equal(snap.surfaces.main.components.length, 7);
    assert.equal(snap.html, null);
    // another chat's page sees nothing of it
    const other = await WebClient.open(port, TOKEN, "chat-other");
    assert.equal(other.frames.find((f) => f.type === "canvas")!.canvas, null);
    c.close();
    other.close();
  });

  it("refuses a push with an invalid line, naming the line and the problem, and keeps the canvas", async () => {
    const before = await snapshot();
    const c = await WebClient.open(port, TOKEN, "chat-canvas");
    const seen = c.frames.length;
    const bad = await call({ action: "a2ui_push", jsonl: [
      line({ dataModelUpdate: { surfaceId: "main", contents: [{ key: "title", valueString: "changed" }] } }),
      "{not json",
      line({ surfaceUpdate: { surfaceId: "main", components: [{ id: "s", component: { Chart: { value: { path: "/x" } } } }] } }),
      line({ type: "surfaceUpdate", surfaceId: "main" }),
      line({ surfaceUpdate: { surfaceId: "main", components: [{ id: "i", component: { Image: { url: { literalString: "javascript:alert(1)" } } } }] } }),
      line({ dataModelUpdate: { surfaceId: "__proto__", path: "/constructor/prototype", contents: [{ key: "polluted", valueBoolean: true }] } }),
    ].join("\n") });
    assert.equal(bad.isError, true);
    assert.equal(bad.errorCode, "TOOL_INVALID_ARGS");
    const msg = textOf(bad);
    assert.match(msg, /^a2ui_push refused, the canvas is unchanged \(rev 2\):/);
    assert.match(msg, /line 2: not a JSON object/);
    assert.match(msg, /line 3: .*"Chart" is not an A2UI v0.8 component; use one of Text, Image, Icon, Video, AudioPlayer, Button/);
    assert.match(msg, /line 4: a message has exactly one key.*no "type" field/);
    assert.match(msg, /line 5: .*Image\.url: an image url is https/);
    assert.match(msg, /line 6: dataModelUpdate\.surfaceId: this id is not allowed; dataModelUpdate\.path: this path is not allowed/);
    assert.doesNotMatch(msg, /line 1:/, "the valid line is not named");
    assert.deepEqual(await snapshot(), before, "the canvas is as it was (the valid first line was not applied)");
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!c.frames.slice(seen).some((f) => f.type === "canvas"), "the page got no change");

    // malformed arguments are typed errors too, and the actor serves on
    const unknown = await call({ action: "navigate", url: "https://example.com" });
    assert.equal(unknown.errorCode, "TOOL_INVALID_ARGS");
    assert.match(textOf(unknown), /action/);
    const empty = await call({ action: "a2ui_push" });
    assert.match(textOf(empty), /needs jsonl/);
    assert.equal((await snapshot()).rev, 2);
    c.close();
  });

  it("a Button press (userAction) becomes a message of the chat's session, which the agent answers", async () => {
    const chat = "chat-e2e";
    const c = await WebClient.open(port, TOKEN, chat);
    // the agent draws the form itself, in a run of this chat's session
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "canvas", arguments: { action: "a2ui_push", jsonl: formJsonl("Join the club") } }] });
    system.fake.enqueue({ kind: "text", text: "The form is on the canvas." });
    const id = randomUUID();
    c.send({ type: "send", id, chat, text: "show me a sign-up form" });
    await c.next((f) => f.type === "ack" && f.id === id, "ack");
    const drawn = await c.next((f) => f.type === "canvas" && f.canvas?.surfaces?.main, "the form the agent pushed");
    assert.equal(drawn.canvas.surfaces.main.data.title, "Join the club");
    await c.next((f) => f.type === "entry" && f.entry.role === "assistant" && f.entry.text === "The form is on the canvas.", "the agent's reply");
    const toolResult = system.fake.requests[1]!.body.messages.find((m) => m.role === "tool");
    assert.match(messageText(toolResult), /pushed 3 messages/);

    // a press on a button the canvas does not have is refused
    const stale = randomUUID();
    c.send({ type: "canvas_action", id: stale, chat, surfaceId: "main", sourceComponentId: "title", name: "submit_form", context: {} });
    assert.match((await c.next((f) => f.type === "nack" && f.id === stale, "nack")).message, /no button "title"/);

    system.fake.enqueue({ kind: "text", text: "Welcome, Ada!" });
    const press = randomUUID();
    c.send({ type: "canvas_action", id: press, chat, surfaceId: "main", sourceComponentId: "submit", name: "submit_form", context: { name: "Ada", agree: true } });
    const ack = await c.next((f) => f.type === "ack" && f.id === press, "ack of the press");
    assert.equal(ack.duplicate, false);
    const expected = '[canvas userAction] name="submit_form" component="submit" surface="main" context={"name":"Ada","agree":true}';
    const stored = await lastWebInbound(system);
    assert.equal(stored?.id, press);
    assert.equal(stored?.text, expected);
    assert.equal(stored?.conversation, chat);
    assert.equal(stored?.sessionName, chat, "the session the canvas belongs to");
    const line = await c.next((f) => f.type === "entry" && f.entry.id === press, "the press as the user's chat line");
    assert.equal(line.entry.text, expected);
    await c.next((f) => f.type === "entry" && f.entry.text === "Welcome, Ada!", "the agent's answer to the press");
    const asked = system.fake.requests[system.fake.requests.length - 1]!.body.messages;
    assert.equal(messageText(asked[asked.length - 1]), `${expected}\n[message_id: ${press}]`, "the model got the action as the user's message (with its id)");
    assert.ok(asked.some((m) => m.role === "user" && messageText(m).startsWith("show me a sign-up form\n[message_id: ")), "in the same session as the form");
    c.close();
  });

  it("present shows sandboxed HTML (size-capped), hide hides it, a2ui_reset empties the canvas", async () => {
    const key = "agent:main:web:dm:chat-present";
    const c = await WebClient.open(port, TOKEN, "chat-present");
    const big = await call({ action: "present", html: `<p>${"x".repeat(100 * 1024)}</p>` }, key);
    assert.equal(big.errorCode, "PAYLOAD_TOO_LARGE");
    assert.match(textOf(big), /the html is 102407 bytes; the canvas shows at most 102400/);
    assert.match(textOf(await call({ action: "present" }, key)), /the canvas is empty/);

    const html = "<!doctype html><h1>Chart</h1><script>document.title = 'ran'</script>";
    let seen = c.frames.length;
    assert.match(await ok({ action: "present", html, title: "Sales chart" }, key), /presented in a sandboxed frame \(its scripts do not run: scripts are off\).*shown on 1 open web page/);
    const shown = await c.canvasAfter(seen, "the presented frame");
    assert.equal(shown.canvas.view, "html");
    assert.equal(shown.canvas.visible, true);
    assert.equal(shown.canvas.html.title, "Sales chart");
    assert.equal(shown.canvas.html.scripts, false, "channels.web.canvas.allowScripts is off by default");
    assert.ok(!JSON.stringify(shown).includes("<h1>"), "the page gets the frame's id, not its HTML");
    const frameId = shown.canvas.html.frameId as string;
    assert.match(frameId, /^[0-9a-f]{32}$/);
    const res = await fetch(`http://127.0.0.1:${port}/canvas/frame/${frameId}`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), html);
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const part of ["default-src 'none'", "script-src 'none'", "img-src data:", "form-action 'none'", "frame-ancestors 'self'"]) assert.ok(csp.includes(part), `${part} in ${csp}`);
    assert.ok(csp.startsWith("sandbox; "), csp);
    assert.ok(!/connect-src|allow-same-origin|allow-scripts|script-src 'unsafe/.test(csp), csp);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.equal((await fetch(`http://127.0.0.1:${port}/canvas/frame/${"0".repeat(32)}`)).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${port}/canvas/frame/..%2Fapi`)).status, 404);

    // a new present replaces the frame: the old id is forgotten at once
    seen = c.frames.length;
    await ok({ action: "present", html: "<!doctype html><p>v2</p>" }, key);
    const replaced = (await c.canvasAfter(seen, "the second frame")).canvas.html.frameId as string;
    assert.notEqual(replaced, frameId);
    assert.equal((await fetch(`http://127.0.0.1:${port}/canvas/frame/${frameId}`)).status, 404, "the replaced frame's id answers 404");
    assert.equal(await (await fetch(`http://127.0.0.1:${port}/canvas/frame/${replaced}`)).text(), "<!doctype html><p>v2</p>");

    seen = c.frames.length;
    assert.match(await ok({ action: "hide" }, key), /hidden/);
    assert.equal((await c.canvasAfter(seen, "hidden")).canvas.visible, false);
    assert.equal((await snapshot(key)).visible, false);
    seen = c.frames.length;
    await ok({ action: "present" }, key);
    assert.equal((await c.canvasAfter(seen, "shown again")).canvas.visible, true);

    await ok({ action: "a2ui_push", jsonl: [line({ surfaceUpdate: { surfaceId: "s2", components: [text("root", "hello")] } })].join("\n") }, key);
    seen = c.frames.length;
    assert.match(await ok({ action: "a2ui_reset" }, key), /the canvas is empty/);
    const reset = await c.canvasAfter(seen, "the reset canvas");
    assert.equal(reset.canvas.visible, false);
    assert.deepEqual(reset.canvas.surfaces, {});
    const snap = await snapshot(key);
    assert.deepEqual([snap.surfaces, snap.html, snap.visible], [{}, null, false]);
    assert.equal((await fetch(`http://127.0.0.1:${port}/canvas/frame/${replaced}`)).status, 404, "a reset forgets the frame");
    c.close();
  });

  it("takes ids named like Object.prototype members (toString, hasOwnProperty, valueOf) as ordinary ids", async () => {
    const chat = "chat-protoids";
    const key = `agent:main:web:dm:${chat}`;
    const c = await WebClient.open(port, TOKEN, chat);
    const seen = c.frames.length;
    const result = await ok({ action: "a2ui_push", jsonl: protoJsonl() }, key);
    assert.match(result, /^pushed 5 messages \(rev 1\); surface "toString": 4 components, shown from "toString"; surface "hasOwnProperty": 0 components, not shown yet; surface "valueOf": 0 components, not shown yet;/);
    assert.match(result, /note: surface "valueOf" is not shown: its root "toString" is not defined/);
    const snap = await snapshot(key);
    assert.deepEqual(Object.keys(snap.surfaces).sort(), ["hasOwnProperty", "toString", "valueOf"]);
    assert.deepEqual(snap.surfaces.toString.dataModel, { valueOf: { toString: { hasOwnProperty: "deep value" } } });
    assert.deepEqual(snap.surfaces.hasOwnProperty.dataModel, { toString: "kept" }, "a data update to surface hasOwnProperty is applied");
    assert.equal(snap.surfaces.toString.rendering, true);
    assert.equal(snap.surfaces.valueOf.rendering, false);
    const frame = await c.canvasAfter(seen, "the canvas with odd ids");
    assert.equal(frame.canvas.surfaces.toString.shownRoot, "toString");
    assert.equal(frame.canvas.surfaces.valueOf.shownRoot, undefined);
    // a component type named like a member is refused as a bad line, not a failure
    const bad = await call({ action: "a2ui_push", jsonl: line({ surfaceUpdate: { surfaceId: "toString", components: [{ id: "x", component: { toString: {} } }] } }) }, key);
    assert.equal(bad.errorCode, "TOOL_INVALID_ARGS", textOf(bad));
    assert.match(textOf(bad), /line 1: .*"toString" is not an A2UI v0.8 component/);
    // presses: only the real Button of the real surface is accepted
    for (const [surfaceId, sourceComponentId] of [["toString", "valueOf"], ["valueOf", "toString"], ["hasOwnProperty", "hasOwnProperty"], ["toString", "toString"]] as const) {
      const id = randomUUID();
      c.send({ type: "canvas_action", id, chat, surfaceId, sourceComponentId, name: "press", context: {} });
      assert.match((await c.next((f) => f.type === "nack" && f.id === id, `nack of ${surfaceId}/${sourceComponentId}`)).message, /the canvas has no button/);
    }
    system.fake.enqueue({ kind: "text", text: "pressed" });
    const press = randomUUID();
    c.send({ type: "canvas_action", id: press, chat, surfaceId: "toString", sourceComponentId: "hasOwnProperty", name: "press", context: { v: "deep value" } });
    assert.equal((await c.next((f) => (f.type === "ack" || f.type === "nack") && f.id === press, "the press answered")).type, "ack");
    await c.next((f) => f.type === "entry" && f.entry.text === "pressed", "the agent's answer");
    c.close();
  });

  it("forgets a session's canvas when the session is reset (/new) or deleted: the page clears, old buttons and frames are gone", async () => {
    const chat = "chat-reset";
    const key = `agent:main:web:dm:${chat}`;
    const c = await WebClient.open(port, TOKEN, chat);
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "canvas", arguments: { action: "a2ui_push", jsonl: formJsonl("Before /new") } }] });
    system.fake.enqueue({ kind: "text", text: "drawn" });
    const first = randomUUID();
    c.send({ type: "send", id: first, chat, text: "draw the form" });
    await c.next((f) => f.type === "entry" && f.entry.text === "drawn", "the run that drew the form");
    let seen = c.frames.length;
    await ok({ action: "present", html: "<!doctype html><p>old</p>" }, key);
    const frameId = (await c.canvasAfter(seen, "the presented frame")).canvas.html.frameId as string;
    await ok({ action: "present" }, key);

    seen = c.frames.length;
    const reset = randomUUID();
    c.send({ type: "send", id: reset, chat, text: "/new" });
    await c.next((f) => f.type === "entry" && /Fresh session started/.test(f.entry.text), "the /new answer");
    const cleared = await waitFor(() => c.frames.slice(seen).find((f) => f.type === "canvas"), 20_000, "the canvas after /new");
    assert.equal(cleared.canvas, null, "the page has no canvas any more");
    const snap = await snapshot(key);
    assert.deepEqual([snap.rev, snap.surfaces, snap.html], [0, {}, null]);
    assert.equal((await fetch(`http://127.0.0.1:${port}/canvas/frame/${frameId}`)).status, 404, "the old frame is gone");
    const stale = randomUUID();
    c.send({ type: "canvas_action", id: stale, chat, surfaceId: "main", sourceComponentId: "submit", name: "submit_form", context: {} });
    assert.match((await c.next((f) => f.type === "nack" && f.id === stale, "the old button refused")).message, /no button "submit"/);
    const again = await WebClient.open(port, TOKEN, chat);
    assert.equal(again.frames.find((f) => f.type === "canvas")!.canvas, null, "a page opened later has none either");
    again.close();

    // deleting the session forgets its canvas too
    await ok({ action: "a2ui_push", jsonl: formJsonl("Before delete") }, key);
    await c.next((f) => f.type === "canvas" && f.canvas?.surfaces?.main?.data?.title === "Before delete", "the new canvas");
    seen = c.frames.length;
    const cli = await system.nats.connect("cli");
    try {
      assert.equal((await new BusClient(cli).call("sessions", "delete", { sessionKey: key })).deleted, true);
    } finally {
      await cli.close();
    }
    assert.equal((await waitFor(() => c.frames.slice(seen).find((f) => f.type === "canvas"), 20_000, "the canvas after delete")).canvas, null);
    assert.equal((await snapshot(key)).rev, 0);
    c.close();
  });

  it("loads a canvas web image only through the channel, with the token, for a URL on the chat's canvas and a public address", async () => {
    const chat = "chat-image";
    const key = `agent:main:web:dm:${chat}`;
    const url = `http://127.0.0.1:${port}/private.png`;
    await ok({ action: "a2ui_push", jsonl: line({ surfaceUpdate: { surfaceId: "pics", components: [{ id: "root", component: { Image: { url: { literalString: url } } } }] } }) }, key);
    const image = (u: string, token: string | null = TOKEN, c = chat) => fetch(`http://127.0.0.1:${port}/api/canvas/image?chat=${c}&url=${encodeURIComponent(u)}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    assert.equal((await image(url, null)).status, 401);
    assert.equal((await image(url, "wrong-token-0123456789abcdef")).status, 401);
    const notOnCanvas = await image("https://example.com/a.png");
    assert.equal(notOnCanvas.status, 404, "only what the chat's canvas shows");
    assert.equal((await image(url, TOKEN, "chat-other")).status, 404, "another chat's canvas has no such image");
    const refused = await image(url);
    assert.equal(refused.status, 403, "a loopback address is not fetched (the public-address rule)");
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /refused to load an image from http:\/\/127\.0\.0\.1:\d+: 127\.0\.0\.1 is a private, loopback/);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    const imgSrc = /img-src [^;]+/.exec(page.headers.get("content-security-policy") ?? "")?.[0];
    assert.equal(imgSrc, "img-src 'self' data: blob:", "the chat page loads no image from other hosts");
  });

  it("takes the rest of the v0.8 catalog (Icon, Video, AudioPlayer, Tabs, Modal, Slider, MultipleChoice, DateTimeInput); malformed ones are refused naming the line and the problem", async () => {
    const key = "agent:main:web:dm:chat-widgets";
    const result = await ok({ action: "a2ui_push", jsonl: widgetsJsonl(media) }, key);
    assert.equal(result, `pushed 3 messages (rev 1); surface "w": ${WIDGET_IDS.length} components, shown from "root"; no web page shows this chat right now; the user sees it when they open the chat.`);
    const snap = await snapshot(key);
    assert.deepEqual(snap.surfaces.w.components.map((c: { id: string }) => c.id).sort(), WIDGET_IDS);
    assert.deepEqual(snap.surfaces.w.dataModel.order, { volume: 3, toppings: { 0: "ham" }, when: "2026-12-01T18:30" });
    // children named by Tabs and Modal count for the "not defined yet" note
    const noted = await ok({ action: "a2ui_push", jsonl: line({ surfaceUpdate: { surfaceId: "notes", components: [
      { id: "root", component: { Tabs: { tabItems: [{ title: { literalString: "A" }, child: "tab-a" }] } } },
      { id: "m", component: { Modal: { entryPointChild: "m-open", contentChild: "m-body" } } },
    ] } }) }, key);
    assert.match(noted, /note: surface "notes" names components not defined yet: tab-a, m-open, m-body/);

    const su = (component: object) => line({ surfaceUpdate: { surfaceId: "w", components: [{ id: "bad", component }] } });
    const bad = await call({ action: "a2ui_push", jsonl: [
      su({ Icon: { name: { literalString: "rocket" } } }),
      su({ Video: { url: { literalString: "data:video/mp4;base64,AAAA" } } }),
      su({ AudioPlayer: { url: { literalString: "javascript:alert(1)" } } }),
      su({ Slider: { value: { path: "/v" }, minValue: 5, maxValue: 5 } }),
      su({ MultipleChoice: { selections: { path: "/s" }, options: [{ label: { literalString: "A" }, value: "a" }, { label: { literalString: "B" }, value: "a" }] } }),
      su({ MultipleChoice: { selections: { literalString: "a" }, options: [{ label: { literalString: "A" }, value: "a" }] } }),
      su({ DateTimeInput: { value: { path: "/d" }, enableDate: false, enableTime: false } }),
      su({ Tabs: { tabItems: [] } }),
      su({ Modal: { entryPointChild: "open" } }),
      su({ Button: { child: "t", action: { name: "go", context: [{ key: "a", value: { path: "/a" } }, { key: "a", value: { path: "/b" } }] } } }),
    ].join("\n") }, key);
    assert.equal(bad.errorCode, "TOOL_INVALID_ARGS");
    const msg = textOf(bad);
    const at = (n: number, problem: string) => `line ${n}: surfaceUpdate.components.0.component.${problem}`;
    assert.match(msg, /^a2ui_push refused, the canvas is unchanged \(rev 2\):/);
    assert.ok(msg.includes(at(1, "Icon.name.literalString: an icon name is one of accountCircle, add, arrowBack")), msg);
    assert.ok(msg.includes(at(2, "Video.url: a video url is https://… or http://… (no data: URLs)")), msg);
    assert.ok(msg.includes(at(3, "AudioPlayer.url: an audio url is https://…")), msg);
    assert.ok(msg.includes(at(4, "Slider.maxValue: minValue must be below maxValue")), msg);
    assert.ok(msg.includes(at(5, "MultipleChoice.options: option values must be unique")), msg);
    assert.ok(msg.includes(at(6, 'MultipleChoice.selections: Unrecognized key: "literalString"')), msg);
    assert.ok(msg.includes(at(7, "DateTimeInput: enableDate and enableTime are both false: nothing to pick")), msg);
    assert.ok(msg.includes(at(8, "Tabs.tabItems: Too small")), msg);
    assert.ok(msg.includes(at(9, "Modal.contentChild: Invalid input")), msg);
    assert.ok(msg.includes(at(10, "Button.action.context: context keys must be unique")), msg);
    assert.equal((await snapshot(key)).rev, 2, "nothing of the refused push was applied");
  });

  it("a Button whose context reads a Slider, MultipleChoice and DateTimeInput sends the user's values to the agent; the action payload is checked", async () => {
    const chat = "chat-widgets";
    const c = await WebClient.open(port, TOKEN, chat);
    assert.ok(c.frames.find((f) => f.type === "canvas")!.canvas.surfaces.w.components.volume, "the page gets the widgets");
    const press = (context: unknown, sourceComponentId = "book", name = "book") => {
      const id = randomUUID();
      c.send({ type: "canvas_action", id, chat, surfaceId: "w", sourceComponentId, name, context });
      return id;
    };
    // the page sends the keys the button declares, nothing else
    const extra = press({ volume: 7, admin: true });
    const refused = await c.next((f) => f.type === "nack" && f.id === extra, "the press with an undeclared key");
    assert.equal(refused.code, "VALIDATION_FAILED");
    assert.equal(refused.message, 'the action "book" has no context key "admin"');
    // the frame itself is capped: keys, size, JSON values
    const seen = c.frames.length;
    press(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i])));
    assert.match((await c.next((f) => f.type === "error" && /at most 32 keys/.test(f.message), "too many keys")).message, /context/);
    press({ volume: "x".repeat(40_000) });
    assert.match((await c.next((f) => f.type === "error" && /bytes of JSON/.test(f.message), "a context too large")).message, /at most 32768 bytes/);
    assert.ok(!c.frames.slice(seen).some((f) => f.type === "ack"), "neither reached the agent");

    system.fake.enqueue({ kind: "text", text: "Booked for Christmas Eve." });
    const id = press({ volume: 7, toppings: ["ham", "olives"], when: "2026-12-24T19:45", via: "canvas" });
    assert.equal((await c.next((f) => (f.type === "ack" || f.type === "nack") && f.id === id, "the press answered")).type, "ack");
    const expected = '[canvas userAction] name="book" component="book" surface="w" context={"volume":7,"toppings":["ham","olives"],"when":"2026-12-24T19:45","via":"canvas"}';
    assert.equal((await lastWebInbound(system))?.text, expected);
    await c.next((f) => f.type === "entry" && f.entry.text === "Booked for Christmas Eve.", "the agent's answer");
    const asked = system.fake.requests[system.fake.requests.length - 1]!.body.messages;
    assert.equal(messageText(asked[asked.length - 1]), `${expected}\n[message_id: ${id}]`, "the model got the values");
    c.close();
  });

  it("loads a canvas Video or AudioPlayer only through the channel, under the same public-address rule as images", async () => {
    const chat = "chat-video";
    const key = `agent:main:web:dm:${chat}`;
    const privateUrl = `http://127.0.0.1:${port}/clip.mp4`;
    await ok({ action: "a2ui_push", jsonl: line({ surfaceUpdate: { surfaceId: "v", components: [
      { id: "root", component: { Column: { children: { explicitList: ["private", "clip", "song", "page"] } } } },
      { id: "private", component: { Video: { url: { literalString: privateUrl } } } },
      { id: "clip", component: { Video: { url: { literalString: `${media}/clip.webm` } } } },
      { id: "song", component: { AudioPlayer: { url: { literalString: `${media}/song.mp3` } } } },
      { id: "page", component: { Video: { url: { literalString: `${media}/page.html` } } } },
    ] } }) }, key);
    const get = (kind: string, u: string, token: string | null = TOKEN, c = chat) => fetch(`http://127.0.0.1:${port}/api/canvas/media?kind=${kind}&chat=${c}&url=${encodeURIComponent(u)}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;

    assert.equal((await get("video", privateUrl, null)).status, 401);
    const refused = await get("video", privateUrl);
    assert.equal(refused.status, 403, "a loopback address is not fetched (the public-address rule of images)");
    assert.match((await errorOf(refused)).message, /refused to load a video from http:\/\/127\.0\.0\.1:\d+: 127\.0\.0\.1 is a private, loopback/);
    assert.equal((await get("audio", privateUrl)).status, 403, "the same for audio");
    assert.equal((await get("video", "https://example.com/a.mp4")).status, 404, "only what the chat's canvas shows");
    assert.equal((await get("video", `${media}/clip.webm`, TOKEN, "chat-other")).status, 404, "another chat's canvas has no such video");
    const badKind = await get("script", `${media}/clip.webm`);
    assert.equal(badKind.status, 400);
    assert.equal((await errorOf(badKind)).message, "kind is image, video or audio");

    // an allowed host (tools.web.allowPrivateHosts): the right type of the right kind only
    const before = mediaRequests.length;
    const clip = await get("video", `${media}/clip.webm`);
    assert.equal(clip.status, 200);
    assert.equal(clip.headers.get("content-type"), "video/webm");
    assert.equal(clip.headers.get("x-content-type-options"), "nosniff");
    assert.equal(await clip.text(), "not really a webm");
    assert.equal((await get("audio", `${media}/song.mp3`)).headers.get("content-type"), "audio/mpeg");
    const notVideo = await get("video", `${media}/page.html`);
    assert.equal(notVideo.status, 502);
    assert.match((await errorOf(notVideo)).message, /answered HTTP 200 text\/html, not an MP4, WebM or Ogg video/);
    const audioAsVideo = await get("video", `${media}/song.mp3`);
    assert.equal(audioAsVideo.status, 502, "an audio file is not a video");
    const videoAsImage = await fetch(`http://127.0.0.1:${port}/api/canvas/image?chat=${chat}&url=${encodeURIComponent(`${media}/clip.webm`)}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(videoAsImage.status, 502, "the image route takes images only");
    assert.deepEqual(mediaRequests.slice(before), ["/clip.webm", "/song.mp3", "/page.html", "/song.mp3", "/clip.webm"]);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    const mediaSrc = /media-src [^;]+/.exec(page.headers.get("content-security-policy") ?? "")?.[0];
    assert.equal(mediaSrc, "media-src blob:", "the chat page plays nothing from other hosts");
  });

  it("keeps the canvas across a restart of the web channel", async () => {
    const before = await snapshot();
    assert.ok(before.rev >= 2);
    await system.actors.get("channel-web")!.stop();
    await system.startActor("channel-web");
    await waitFor(async () => (await call({ action: "snapshot" }).catch(() => undefined))?.isError === false || undefined, 20_000, "the canvas tool served again");
    assert.deepEqual(await snapshot(), before);
    const c = await WebClient.open(port, TOKEN, "chat-canvas");
    const frame = c.frames.find((f) => f.type === "canvas")!;
    assert.equal(frame.canvas.rev, before.rev);
    assert.equal(frame.canvas.surfaces.main.data.form.name, "Ada");
    c.close();
  });

  it("renders in a real browser: Text and Button, bound fields, a click sends the userAction; presented HTML runs no script and loads nothing", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`);
      await page.locator("#status.online").waitFor({ timeout: 10_000 });
      assert.equal(await page.locator("#canvas").isHidden(), true, "no canvas panel without a canvas");

      // the main chat shows the main session's canvas
      await ok({ action: "a2ui_push", jsonl: formJsonl("Hello from the canvas") }, "agent:main:main");
      await page.locator("#canvas .a2-surface h2", { hasText: "Hello from the canvas" }).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator("#canvas button.a2-button.primary").textContent(), "Send");
      const raw = page.locator('#canvas [data-a2-id="raw"]');
      assert.equal(await raw.textContent(), "<b>not bold</b>", "A2UI text is text, never HTML");
      assert.equal(await raw.locator("b").count(), 0);
      await page.fill('#canvas [data-a2-id="name"] input', "Grace");
      await page.check('#canvas [data-a2-id="agree"] input');
      // an update of another path keeps what the user typed
      await ok({ action: "a2ui_push", jsonl: line({ dataModelUpdate: { surfaceId: "main", path: "/", contents: [{ key: "title", valueString: "Almost done" }, { key: "form", valueMap: [{ key: "name", valueString: "" }, { key: "agree", valueBoolean: false }] }] } }) }, "agent:main:main");
      await page.locator("#canvas h2", { hasText: "Almost done" }).waitFor({ timeout: 10_000 });
      assert.equal(await page.inputValue('#canvas [data-a2-id="name"] input'), "Grace");
      assert.equal(await page.isChecked('#canvas [data-a2-id="agree"] input'), true);
      await page.screenshot({ path: join(ARTIFACTS, "canvas-form.png") });
      await page.click("#canvas button.a2-button");
      const stored = await waitFor(async () => {
        const m = await lastWebInbound(system);
        return m?.text.startsWith("[canvas userAction]") && m.text.includes("Grace") ? m : undefined;
      }, 10_000, "the userAction in LURK_INBOUND");
      assert.equal(stored.text, '[canvas userAction] name="submit_form" component="submit" surface="main" context={"name":"Grace","agree":true}');
      assert.equal(stored.conversation, "main");
      assert.equal(stored.sessionName, undefined, "the main chat follows routing.dmScope (the main session)");
      await page.locator(".msg.user", { hasText: "[canvas userAction]" }).waitFor({ timeout: 10_000 });

      // presented HTML (channels.web.canvas.allowScripts off): no script runs, and nothing it names
      // loads: no meta refresh, remote image, style or preconnect, no WebRTC (no script)
      const sink = await netSink();
      try {
        await ok({ action: "present", html: leakyHtml(sink), title: "Sandbox" }, "agent:main:main");
        const frame = page.frameLocator("#canvas-body iframe");
        await frame.locator("h1#t").waitFor({ timeout: 10_000 });
        await new Promise((r) => setTimeout(r, 2500));
        assert.equal(await frame.locator("h1#t").textContent(), "static", "the script did not run");
        assert.equal(await frame.locator("body").getAttribute("data-rtc"), null);
        assert.equal(await page.locator("#canvas-body iframe").getAttribute("sandbox"), "");
        assert.deepEqual([sink.tcp, sink.udp], [0, 0], "nothing reached the network");
        assert.equal(await page.locator("#canvas-title").textContent(), "Sandbox");
        await page.screenshot({ path: join(ARTIFACTS, "canvas-html.png") });
      } finally {
        await sink.close();
      }

      // ids named like Object.prototype members render and act like any other
      await ok({ action: "a2ui_push", jsonl: protoJsonl() }, "agent:main:main");
      const odd = page.locator('#canvas [data-surface="toString"]');
      await odd.locator('[data-a2-id="valueOf"]', { hasText: "deep value" }).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('#canvas [data-surface="valueOf"]').count(), 0, "a surface whose root is not defined is not shown");
      await odd.locator('[data-a2-id="hasOwnProperty"]').click();
      const pressed = await waitFor(async () => {
        const m = await lastWebInbound(system);
        return m?.text.includes('name="press"') ? m : undefined;
      }, 10_000, "the press on button hasOwnProperty");
      assert.equal(pressed.text, '[canvas userAction] name="press" component="hasOwnProperty" surface="toString" context={"v":"deep value"}');
      await ok({ action: "a2ui_reset" }, "agent:main:main");
      await page.locator("#canvas").waitFor({ state: "hidden", timeout: 10_000 });
      assert.deepEqual(errors, []);
    } finally {
      await browser?.close();
    }
  });

  it("renders Icon, Tabs, Modal, Slider, MultipleChoice, DateTimeInput, Video and AudioPlayer in a real browser; the Button sends what the user set", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`);
      await page.locator("#status.online").waitFor({ timeout: 10_000 });
      await ok({ action: "a2ui_push", jsonl: widgetsJsonl(media) }, "agent:main:main");
      const w = page.locator('#canvas [data-surface="w"]');
      const icon = w.locator('[data-a2-id="star"]');
      await icon.waitFor({ timeout: 10_000 });
      assert.equal(await icon.textContent(), "\u2605");
      assert.deepEqual([await icon.getAttribute("role"), await icon.getAttribute("aria-label")], ["img", "star"]);

      // Tabs: the first tab shows; the second's title comes from the data model, its content is not rendered yet
      assert.deepEqual(await w.locator(".a2-tab").allTextContents(), ["Order", "Media"]);
      assert.equal(await w.locator('.a2-tab[aria-selected="true"]').textContent(), "Order");
      assert.equal(await w.locator('[data-a2-id="clip"]').count(), 0);

      // the inputs show the data model and take the user's values
      const slider = w.locator('[data-a2-id="volume"] input[type="range"]');
      assert.deepEqual([await slider.inputValue(), await slider.getAttribute("min"), await slider.getAttribute("max"), await slider.getAttribute("step")], ["3", "0", "10", "1"]);
      await slider.fill("7");
      assert.equal(await w.locator('[data-a2-id="volume"] output').textContent(), "7");
      const chip = (v: string) => w.locator(`[data-a2-id="toppings"] .a2-chip[data-value="${v}"]`);
      assert.equal(await chip("ham").getAttribute("aria-pressed"), "true", "selected in the data model");
      assert.equal(await chip("pineapple").textContent(), "<i>Pineapple</i>", "a label is text, never HTML");
      assert.equal(await chip("pineapple").locator("i").count(), 0);
      await chip("olives").click();
      assert.equal(await chip("olives").getAttribute("aria-pressed"), "true");
      assert.equal(await chip("pineapple").isDisabled(), true, "maxAllowedSelections (2) reached");
      const when = w.locator('[data-a2-id="when"] input');
      assert.deepEqual([await when.getAttribute("type"), await when.inputValue()], ["datetime-local", "2026-12-01T18:30"]);
      await when.fill("2026-12-24T19:45");

      // Modal: its entry point opens it, and that Button's own action is not sent
      const pressesBefore = (await lastWebInbound(system))?.id;
      await w.locator('[data-a2-id="open"]').click();
      const dialog = w.locator("dialog.a2-dialog[open]");
      await dialog.waitFor({ timeout: 5_000 });
      assert.equal(await dialog.locator('[data-a2-id="terms"]').textContent(), "Delivery takes 30 minutes");
      await page.screenshot({ path: join(ARTIFACTS, "canvas-widgets-modal.png") });
      await dialog.locator(".a2-dialog-close").click();
      await w.locator("dialog.a2-dialog[open]").waitFor({ state: "detached", timeout: 5_000 });

      // Video and AudioPlayer: loaded by the channel on a click, played from blob: URLs, never by themselves
      await w.locator(".a2-tab", { hasText: "Media" }).click();
      const requests = mediaRequests.length;
      const load = w.locator('[data-a2-id="clip"] button.a2-load');
      assert.equal(await load.textContent(), `Load video from ${new URL(media).host}`);
      assert.equal(mediaRequests.length, requests, "nothing is fetched before the click");
      await load.click();
      const video = w.locator('[data-a2-id="clip"] video');
      await video.waitFor({ timeout: 10_000 });
      assert.match((await video.getAttribute("src")) ?? "", /^blob:/);
      assert.deepEqual(await video.evaluate((el) => { const v = el as unknown as MediaState; return [v.controls, v.autoplay, v.preload, v.paused]; }), [true, false, "metadata", true]);
      assert.equal(await w.locator('[data-a2-id="song"] small').textContent(), "Theme tune");
      await w.locator('[data-a2-id="song"] button.a2-load').click();
      const audio = w.locator('[data-a2-id="song"] audio');
      await audio.waitFor({ timeout: 10_000 });
      assert.deepEqual(await audio.evaluate((el) => { const a = el as unknown as MediaState; return [a.controls, a.autoplay, a.src.startsWith("blob:")]; }), [true, false, true]);
      assert.deepEqual(mediaRequests.slice(requests), ["/clip.webm", "/song.mp3"]);

      // an update elsewhere keeps the open tab, the loaded media and the user's values
      await ok({ action: "a2ui_push", jsonl: line({ dataModelUpdate: { surfaceId: "w", path: "/labels", contents: [{ key: "media", valueString: "Clips" }] } }) }, "agent:main:main");
      await w.locator('.a2-tab[aria-selected="true"]', { hasText: "Clips" }).waitFor({ timeout: 10_000 });
      assert.match((await w.locator('[data-a2-id="clip"] video').getAttribute("src")) ?? "", /^blob:/);
      assert.equal(mediaRequests.length, requests + 2, "shown again without another fetch");
      await page.screenshot({ path: join(ARTIFACTS, "canvas-widgets-media.png") });
      await w.locator(".a2-tab", { hasText: "Order" }).click();
      assert.equal(await w.locator('[data-a2-id="volume"] input').inputValue(), "7");
      assert.equal(await chip("olives").getAttribute("aria-pressed"), "true");
      assert.equal(await w.locator('[data-a2-id="when"] input').inputValue(), "2026-12-24T19:45");

      await w.locator('[data-a2-id="book"]').click();
      const stored = await waitFor(async () => {
        const m = await lastWebInbound(system);
        return m && m.id !== pressesBefore ? m : undefined;
      }, 10_000, "the userAction in LURK_INBOUND");
      assert.equal(stored.text, '[canvas userAction] name="book" component="book" surface="w" context={"volume":7,"toppings":["ham","olives"],"when":"2026-12-24T19:45","via":"canvas"}',
        "the only press that reached the agent is the Book button's, with the user's values");
      await ok({ action: "a2ui_reset" }, "agent:main:main");
      await page.locator("#canvas").waitFor({ state: "hidden", timeout: 10_000 });
      assert.deepEqual(errors, []);
    } finally {
      await browser?.close();
    }
  });
});
