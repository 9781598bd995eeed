/**
 * The browser actor (services/browser) as a process on a real nats-server, with the real tools
 * and approvals actors, driving Debian's Chromium through playwright-core, on a local site
 * (test/harness/browser-site.ts: 127.0.0.1 allowed by tools.web.allowPrivateHosts, 127.0.0.2
 * not). Called as the agent-runner calls tools. Proves: the catalog (with the built-in tools;
 * policy: full profile yes, coding profile and group sessions no); open + snapshot with refs;
 * act (click a link, fill + select + submit a form, a popup tab, an in-page change as a diff,
 * calls on one tab in arrival order, a password never shown back);
 * a PNG screenshot block under the cap, and a noisy page fitted as JPEG; tabs open/list/focus/
 * close; private addresses refused (directly, by redirect over http and https, as a
 * subresource) without the private server ever being reached; browser_evaluate only after a
 * human approval; malformed calls typed and the actor serving on. Then, each on a server of its
 * own: the idle stop (no Chromium left) and the start on the next call, a crashed Chromium
 * started again, a missing Chromium answered with how to install it, and `browser.enabled: false`.
 * Skipped when /usr/bin/chromium is missing.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { errorReplySchema, toolsListReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { BrowserRig, refOf } from "./harness/browser-rig.js";
import { chromiumChildren, startBrowserSite, type BrowserSite } from "./harness/browser-site.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const CHROMIUM = "/usr/bin/chromium";
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)`;

describe("the browser actor: tools on a real Chromium", { skip }, () => {
  let site: BrowserSite;
  const rig = new BrowserRig();

  before(async () => {
    site = await startBrowserSite();
    await rig.start({
      agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "coder", toolProfile: "coding" }],
      tools: { timeoutMs: 60_000, web: { allowPrivateHosts: ["127.0.0.1"] } },
      approvals: { timeoutMs: 30_000 },
    }, ["approvals", "tools"]);
  });
  after(async () => {
    await rig.stop();
    await site?.close();
  });

  it("is in the catalog next to the built-in tools; not for the coding profile nor in group sessions", async () => {
    const list = async (body: Record<string, unknown>) => {
      const tools = new Map<string, { actor: string; needsApproval: boolean }>();
      const replies = await rig.runner.requestMany("lurk.tools.list", JSON.stringify({ type: "lurk.tools.list.v1", id: `list-${Date.now()}`, ts: Date.now(), ...body }), { strategy: "timer", maxWait: 500 });
      for await (const msg of replies) for (const t of toolsListReply.parse(msg.json()).tools) tools.set(t.name, t);
      return tools;
    };
    const main = await list({ agentId: "main", sessionKey: "agent:main:main" });
    assert.equal(main.get("browser")?.actor, "browser");
    assert.equal(main.get("browser")?.needsApproval, false);
    assert.equal(main.get("browser_evaluate")?.needsApproval, true, "evaluate needs a human approval");
    assert.equal(main.get("read")?.actor, "tools", "the built-in tools answer too");
    const group = await list({ agentId: "main", sessionKey: "agent:main:telegram:group:-100123" });
    assert.ok(group.has("read") && !group.has("browser") && !group.has("browser_evaluate"), [...group.keys()].join(","));
    const coder = await list({ agentId: "coder", sessionKey: "agent:coder:main" });
    assert.ok(coder.has("read") && !coder.has("browser"), [...coder.keys()].join(","));
    // the policy holds on the call too
    const denied = await rig.call("browser", { action: "status" }, { sessionKey: "agent:main:telegram:group:-100123" });
    assert.equal(denied.errorCode, "TOOL_DENIED", textOf(denied));
    assert.match(textOf(denied), /session layer/);
  });

  it("status before any call: not running; open + snapshot: headings, links, buttons and fields with refs", async () => {
    assert.match(await rig.ok({ action: "status" }), /not running.*found/s);
    const opened = await rig.ok({ action: "open", url: `${site.main}/` });
    assert.match(opened, /^opened tab t\d+ "Home" http:\/\/127\.0\.0\.1:\d+\/ \(HTTP 200\)/);
    assert.match(opened, /heading "Welcome" \[level=1\] \[ref=e\d+\]/);
    const snap = await rig.ok({ action: "snapshot" });
    assert.match(snap, /^tab t\d+ "Home"/);
    for (const line of [/link "Go next"/, /textbox "Your name"/, /combobox "Color"/, /button "Send"/, /button "Count"/]) refOf(snap, line);
    const small = await rig.ok({ action: "snapshot", maxChars: 200 });
    assert.match(small, /\[snapshot cut at \d+ of \d+ characters/);
  });

  it("act: a click follows a link; fill + selectOption + click submits a form; the result shows the new page", async () => {
    let snap = await rig.ok({ action: "snapshot" });
    const clicked = await rig.ok({ action: "act", kind: "click", ref: refOf(snap, /link "Go next"/) });
    assert.match(clicked, /now: t\d+ "Next" http:\/\/127\.0\.0\.1:\d+\/next \(was .*\/\)/);
    assert.match(clicked, /heading "Second page"/);
    await rig.ok({ action: "navigate", url: `${site.main}/` });
    snap = await rig.ok({ action: "snapshot" });
    assert.match(await rig.ok({ action: "act", kind: "fill", ref: refOf(snap, /textbox "Your name"/), text: "Ada" }), /still: .*"Home"/);
    assert.match(await rig.ok({ action: "act", kind: "selectOption", ref: refOf(snap, /combobox "Color"/), values: ["Blue"] }), /selected: blue/);
    const sent = await rig.ok({ action: "act", kind: "click", ref: refOf(snap, /button "Send"/) });
    assert.match(sent, /now: t\d+ "Done" .*\/submit\?name=Ada&color=blue/);
    assert.match(sent, /heading "Thanks Ada"/);
  });

  it("act: an in-page change comes back as a diff; a link with target=_blank opens a new, current tab; type + submit", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/` });
    const snap = await rig.ok({ action: "snapshot" });
    const counted = await rig.ok({ action: "act", kind: "click", ref: refOf(snap, /button "Count"/) });
    assert.match(counted, /changes since the last snapshot:\n(.|\n)*- .*not clicked(.|\n)*\+ .*clicked 1/);
    const popup = await rig.ok({ action: "act", kind: "click", ref: refOf(snap, /link "Open in new tab"/) });
    const opened = /the page opened a new tab: (t\d+) "Next" .*\/next \(now the current tab\)/.exec(popup);
    assert.ok(opened, popup);
    assert.match(await rig.ok({ action: "snapshot" }), new RegExp(`^tab ${opened[1]} "Next"`));
    await rig.ok({ action: "close", tabId: opened[1] });
    await rig.ok({ action: "navigate", url: `${site.main}/` });
    const again = await rig.ok({ action: "snapshot" });
    const typed = await rig.ok({ action: "act", kind: "type", ref: refOf(again, /textbox "Your name"/), text: "Bob", submit: true });
    assert.match(typed, /now: .*"Done" .*name=Bob/);
    // calls on one tab run in arrival order, one at a time: two clicks, then the snapshot sees both
    await rig.ok({ action: "navigate", url: `${site.main}/` });
    const count = refOf(await rig.ok({ action: "snapshot" }), /button "Count"/);
    const [, , seen] = await Promise.all([rig.ok({ action: "act", kind: "click", ref: count }), rig.ok({ action: "act", kind: "click", ref: count }), rig.ok({ action: "snapshot" })]);
    assert.match(seen, /paragraph \[ref=(f\d+)?e\d+\]: clicked 2/);
    // a password typed into a page is never shown back (snapshots end up in transcripts)
    const secret = await rig.ok({ action: "act", kind: "fill", ref: refOf(await rig.ok({ action: "snapshot" }), /textbox "Password"/), text: "hunter2-secret" });
    assert.match(secret, /textbox "Password" .*: \(a password, not shown\)/);
    assert.doesNotMatch(secret + (await rig.ok({ action: "snapshot" })), /hunter2/);
    const stale = await rig.call("browser", { action: "act", kind: "click", ref: "e9999" });
    assert.equal(stale.errorCode, "NOT_FOUND", textOf(stale));
    assert.match(textOf(stale), /take a snapshot/);
  });

  it("screenshot: a PNG image block under the cap; a noisy page is fitted as JPEG", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/` });
    const shot = await rig.call("browser", { action: "screenshot" });
    assert.equal(shot.isError, false, textOf(shot));
    const image = shot.content.find((b) => b.type === "image");
    assert.ok(image && image.type === "image" && image.dataBase64);
    assert.equal(image.mime, "image/png");
    const png = Buffer.from(image.dataBase64, "base64");
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(png.readUInt32BE(16), 1280, "the viewport's width");
    assert.ok(png.length <= 300 * 1024);
    assert.match(textOf(shot), /screenshot of the viewport of tab t\d+ "Home".*1280x800 PNG/);
    const snap = await rig.ok({ action: "snapshot" });
    const element = await rig.call("browser", { action: "screenshot", ref: refOf(snap, /button "Send"/) });
    assert.match(textOf(element), /screenshot of element (f\d+)?e\d+ /);

    await rig.ok({ action: "navigate", url: `${site.main}/noise` });
    const noisy = await rig.call("browser", { action: "screenshot" });
    assert.equal(noisy.isError, false, textOf(noisy));
    const jpeg = noisy.content.find((b) => b.type === "image");
    assert.ok(jpeg && jpeg.type === "image" && jpeg.dataBase64);
    assert.equal(jpeg.mime, "image/jpeg");
    assert.ok(Buffer.from(jpeg.dataBase64, "base64").length <= 300 * 1024);
    assert.match(textOf(noisy), /JPEG.*to fit 307200 bytes/);
  });

  it("tabs: open, list, focus, close", async () => {
    const a = /opened tab (t\d+)/.exec(await rig.ok({ action: "open", url: `${site.main}/next` }))![1]!;
    const b = /opened tab (t\d+)/.exec(await rig.ok({ action: "open", url: `${site.main}/tall` }))![1]!;
    const tabs = await rig.ok({ action: "tabs" });
    assert.match(tabs, new RegExp(`  ${a} "Next"`));
    assert.match(tabs, new RegExp(`\\* ${b} "Tall"`), "the last opened tab is current");
    assert.match(await rig.ok({ action: "focus", tabId: a }), new RegExp(`current tab: ${a} "Next"`));
    assert.match(await rig.ok({ action: "snapshot" }), new RegExp(`^tab ${a} "Next"`));
    assert.match(await rig.ok({ action: "close", tabId: b }), new RegExp(`closed tab ${b}`));
    assert.doesNotMatch(await rig.ok({ action: "tabs" }), new RegExp(`${b} `));
    const gone = await rig.call("browser", { action: "snapshot", tabId: b });
    assert.equal(gone.errorCode, "NOT_FOUND");
    assert.match(textOf(gone), /no tab t\d+ \(open tabs: /);
  });

  it("private addresses are refused: directly, by a redirect (http and https), as a subresource; the private server is never reached", async () => {
    const direct = await rig.call("browser", { action: "navigate", url: `${site.secret}/secret` });
    assert.equal(direct.errorCode, "FORBIDDEN", textOf(direct));
    assert.match(textOf(direct), /127\.0\.0\.2 is a private, loopback, link-local or otherwise non-public address/);
    const ten = await rig.call("browser", { action: "open", url: "http://10.1.2.3/" });
    assert.equal(ten.errorCode, "FORBIDDEN", textOf(ten));
    const viaRedirect = await rig.call("browser", { action: "navigate", url: `${site.main}/redirect-private` });
    assert.equal(viaRedirect.errorCode, "FORBIDDEN", textOf(viaRedirect));
    assert.match(textOf(viaRedirect), /redirected to http:\/\/127\.0\.0\.2:\d+\/secret, which was refused: .*non-public/);
    const viaHttps = await rig.call("browser", { action: "navigate", url: `${site.main}/redirect-private-https` });
    assert.equal(viaHttps.errorCode, "FORBIDDEN", textOf(viaHttps));
    assert.match(textOf(viaHttps), /led to https:\/\/127\.0\.0\.2:\d+, which was refused/);
    const image = await rig.ok({ action: "navigate", url: `${site.main}/with-private-image` });
    assert.match(image, /"Pictures"/);
    assert.match(image, /blocked: \d+ requests? to non-public addresses \(http:\/\/127\.0\.0\.2:\d+\)/);
    const file = await rig.call("browser", { action: "navigate", url: "file:///etc/passwd" });
    assert.equal(file.errorCode, "TOOL_INVALID_ARGS", textOf(file));
    assert.deepEqual(site.secretHits, [], "nothing reached 127.0.0.2");
  });

  it("browser_evaluate runs only after a human approval; the notice shows the script; deny -> TOOL_DENIED", async () => {
    const cliNc = await rig.nats.connect("cli");
    const cli = new BusClient(cliNc);
    try {
      await rig.ok({ action: "navigate", url: `${site.main}/` });
      const approved = rig.call("browser_evaluate", { expression: "() => document.title + ' / ' + document.querySelectorAll('a').length" });
      const record = await pendingApproval(cli, approved.toolCallId);
      assert.equal(record.tool, "browser_evaluate");
      assert.match(record.command ?? "", /^in tab t\d+ \(http:\/\/127\.0\.0\.1:\d+\/\): \(\) => document\.title/);
      await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
      const answer = await approved;
      assert.equal(answer.isError, false, textOf(answer));
      assert.match(textOf(answer), /^result in tab t\d+ "Home" .*:\n"Home \/ 2"$/);

      const denied = rig.call("browser_evaluate", { expression: "document.cookie" });
      await cli.call("approvals", "decide", { approvalId: (await pendingApproval(cli, denied.toolCallId)).approvalId, decision: "deny", decidedBy: "cli:test" });
      const no = await denied;
      assert.equal(no.errorCode, "TOOL_DENIED", textOf(no));
    } finally {
      await cliNc.close();
    }
  });

  it("malformed calls get typed errors and the actor serves on", async () => {
    for (const [args, problem] of [
      [{ action: "fly" }, /action: Invalid option/],
      [{ action: "open" }, /url: required for open/],
      [{ action: "act", kind: "click" }, /ref: required for act click/],
      [{ action: "act", kind: "wait" }, /give timeMs, text or ref/],
      [{ action: "status", bogus: 1 }, /Unrecognized key/],
      [{ action: "focus", tabId: "../x" }, /tabId/],
    ] as const) {
      const reply = await rig.call("browser", args);
      assert.equal(reply.errorCode, "TOOL_INVALID_ARGS", `${JSON.stringify(args)}: ${textOf(reply)}`);
      assert.match(textOf(reply), problem);
    }
    // not even JSON: an error reply from the runtime, counted; the next call is served
    const raw = await rig.runner.request("lurk.tools.call.browser", "{not json", { timeout: 5_000 });
    assert.equal(errorReplySchema.parse(raw.json()).code, "BAD_JSON");
    assert.match(await rig.ok({ action: "tabs" }), /tab/);
  });
});

describe("the browser actor: idle stop, crash, restart", { skip }, () => {
  let site: BrowserSite;
  const rig = new BrowserRig();

  before(async () => {
    site = await startBrowserSite();
    await rig.start({ agents: [{ id: "main", default: true, toolProfile: "full" }], tools: { web: { allowPrivateHosts: ["127.0.0.1"] } }, browser: { idleStopMs: 1_500 } });
  });
  after(async () => {
    await rig.stop();
    await site?.close();
  });

  it("stops Chromium after idleStopMs without calls; the next call starts it again and says so", async () => {
    await rig.ok({ action: "open", url: `${site.main}/` });
    const pid = rig.browser.child.pid!;
    assert.ok(chromiumChildren(pid).length > 0, "Chromium runs");
    await waitFor(() => chromiumChildren(pid).length === 0, 15_000, "Chromium gone after the idle timeout");
    assert.match(await rig.ok({ action: "status" }), /not running/);
    const again = await rig.ok({ action: "navigate", url: `${site.main}/next` });
    assert.match(again, /^Note: the browser had stopped \(idle for 2 s\) and was started again/);
    assert.match(again, /"Next"/);
    assert.ok(chromiumChildren(pid).length > 0);
  });

  it("a Chromium that dies is started again on the next call", async () => {
    await rig.ok({ action: "open", url: `${site.main}/` });
    const pid = rig.browser.child.pid!;
    for (const child of chromiumChildren(pid)) process.kill(child, "SIGKILL");
    await waitFor(async () => /not running/.test(await rig.ok({ action: "status" })), 10_000, "the actor noticed");
    const again = await rig.ok({ action: "open", url: `${site.main}/next` });
    assert.match(again, /^Note: the browser had stopped \(Chromium exited unexpectedly\)/);
    assert.match(again, /"Next"/);
  });
});

describe("the browser actor: no Chromium", () => {
  const rig = new BrowserRig();
  before(() => rig.start({ agents: [{ id: "main", default: true, toolProfile: "full" }], browser: { executablePath: "/nonexistent/chromium" } }));
  after(() => rig.stop());

  it("a call says how to install it; status says it is missing; the actor keeps serving", async () => {
    for (let i = 0; i < 2; i++) {
      const reply = await rig.call("browser", { action: "open", url: "https://example.com/" });
      assert.equal(reply.errorCode, "UNAVAILABLE", textOf(reply));
      assert.match(textOf(reply), /no Chromium at \/nonexistent\/chromium.*sudo apt-get install chromium.*browser\.executablePath/);
    }
    assert.match(await rig.ok({ action: "status" }), /MISSING \(install it: sudo apt-get install chromium/);
  });
});

describe("the browser actor: browser.enabled false", () => {
  const rig = new BrowserRig();
  before(() => rig.start({ agents: [{ id: "main", default: true, toolProfile: "full" }], browser: { enabled: false } }));
  after(() => rig.stop());

  it("runs, says so in its service metadata, and serves no tool", async () => {
    const cli = await rig.nats.connect("cli");
    try {
      const info = (await cli.request("$SRV.INFO.browser", "", { timeout: 5_000 })).json<{ metadata: Record<string, string> }>();
      assert.equal(info.metadata.browserEnabled, "false");
    } finally {
      await cli.close();
    }
    // nothing answers the catalog request (no responders)
    const listed = await rig.runner.request("lurk.tools.list", JSON.stringify({ type: "lurk.tools.list.v1", id: "list-off", ts: Date.now(), agentId: "main" }), { timeout: 2_000 }).then(() => "answered", (err: Error) => err.message);
    assert.match(listed, /no responders/i);
  });
});
