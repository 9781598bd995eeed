/**
 * The browser tool through the whole system (real nats-server, every actor a process, the fake
 * OpenAI server scripting the model's tool calls, Debian's Chromium): the browser actor joins,
 * its tool is offered to the model, the model's `browser` call goes agent-runner -> bus ->
 * browser actor (not the tools actor), and its result reaches the model's next request: the
 * page's snapshot as the tool message, a screenshot as an image the model is sent. The user gets
 * the reply. Skipped when /usr/bin/chromium is missing.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { waitFor } from "./harness/actors.js";
import { startBrowserSite, type BrowserSite } from "./harness/browser-site.js";
import { CliClient, TestSystem } from "./harness/system.js";

const CHROMIUM = "/usr/bin/chromium";

describe("the browser tool end to end", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, () => {
  let site: BrowserSite;
  let system: TestSystem;
  let cli: CliClient;

  before(async () => {
    site = await startBrowserSite();
    system = await TestSystem.start({
      config: {
        agents: [{ id: "main", default: true, toolProfile: "full" }],
        tools: { web: { allowPrivateHosts: ["127.0.0.1"] } },
        memory: { enabled: false },
      },
    });
    await system.startActor("browser");
    cli = await CliClient.connect(system.nats, "browser-e2e");
  });
  after(async () => {
    await cli?.close();
    await system?.stop();
    await site?.close();
  });

  it("the model opens a page and takes a screenshot; the results reach its next requests and the user gets the reply", async () => {
    // the browser actor announced its catalog: plain turns until the model is offered the tool
    let pings = 0;
    await waitFor(async () => {
      system.fake.reset();
      await cli.send(`ping ${++pings}`);
      return (system.fake.requests[0]?.body.tools ?? []).some((t) => t.function.name === "browser");
    }, 15_000, "browser in the catalog the model is offered");

    system.fake.reset();
    system.fake.enqueue(
      { kind: "tool_calls", calls: [{ name: "browser", arguments: { action: "open", url: `${site.main}/` } }] },
      { kind: "tool_calls", calls: [{ name: "browser", arguments: { action: "screenshot" } }] },
    );
    const reply = await cli.send("what is on my test site?", { timeoutMs: 60_000 });
    // the fake answers the last message it got: the screenshot, sent as an image after the tool message
    assert.match(reply.text, /^echo: \[the image the browser call \S+ returned:\]/);

    const [, second, third] = system.fake.requests;
    const opened = second?.body.messages.find((m) => m.role === "tool");
    const openedText = typeof opened?.content === "string" ? opened.content : JSON.stringify(opened?.content);
    assert.match(openedText, /opened tab t\d+ "Home" http:\/\/127\.0\.0\.1:\d+\/ \(HTTP 200\)/);
    assert.match(openedText, /heading \\?"Welcome\\?" \[level=1\] \[ref=e\d+\]/);
    assert.match(openedText, /button \\?"Send\\?" \[ref=e\d+\]/);
    const shot = third?.body.messages.filter((m) => m.role === "tool").pop();
    assert.match(typeof shot?.content === "string" ? shot.content : JSON.stringify(shot?.content), /screenshot of the viewport of tab t\d+ "Home" .*1280x800 PNG/);
    // OpenAI's tool messages take text only: the screenshot follows them as an image part
    const image = third?.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((p) => p.type === "image_url");
    assert.match(image?.image_url?.url ?? "", /^data:image\/png;base64,iVBORw0KGgo/);
    // served by the browser actor's own endpoint
    const stats = (await cli.nc.request("$SRV.STATS.browser", "", { timeout: 5_000 })).json<{ endpoints: Array<{ name: string; num_requests: number }> }>();
    assert.ok((stats.endpoints.find((e) => e.name === "call-browser")?.num_requests ?? 0) >= 2, JSON.stringify(stats.endpoints));
  });
});
