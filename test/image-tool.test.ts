/**
 * The `image` tool end to end (the whole system, fake OpenAI): a run calls it on a workspace
 * image; the tools actor stores the file and asks the agent-runner (`lurk.agent-runner.describe_image`),
 * which sends the image (scaled down to media.imageMaxPx) and the question to the agent's image
 * model; the answer is the tool result the run's model reads, and its tokens are booked under
 * purpose `image`. Refusals: a path outside the workspace, a file that is not an image (in the
 * workspace or the media store), an image model without vision; the tool is absent for an agent
 * without an image model (catalog, explain) and a call of it anyway is NO_MODEL.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { subjects, toolCallReply, utcDay } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { MediaStore } from "../shared/runtime/media.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import type { ChatMessage } from "./fakes/openai-server.js";
import { waitFor } from "./harness/actors.js";
import { decodedImage, flatImage } from "./harness/images.js";
import { CliClient, TestSystem } from "./harness/system.js";

const s = subjects();
const MAX_PX = 256;

/** the image parts of a chat request's messages, decoded */
const imageParts = (messages: ChatMessage[]) => messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
  .filter((p) => p.type === "image_url").map((p) => p.image_url!.url);

describe("the image tool", () => {
  let system: TestSystem;
  let nc: NatsConnection;
  let bus: BusClient;
  let agentNc: NatsConnection;
  let agentBus: BusClient;
  let cli: CliClient;
  let media: MediaStore;
  let n = 0;

  const tool = (args: Record<string, unknown>, agentId = "main") => agentBus.callSubject(s.toolCall("image"), "lurk.tools.call.v1", {
    toolCallId: `image-tool-${++n}`, runId: "run-image-tool-test", sessionKey: `agent:${agentId}:main`, agentId, tool: "image", args,
  }, toolCallReply, { timeoutMs: 30_000 });
  const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((b) => b.text ?? "").join("");

  before(async () => {
    system = await TestSystem.start({
      files: { "notes.txt": "not an image\n" },
      config: {
        media: { imageMaxPx: MAX_PX },
        // a second OpenAI auth profile besides OPENAI_API_KEY's, for failover
        providers: { openai: { profiles: [{ id: "backup", apiKey: "sk-image-backup" }] } },
        agents: [
          { id: "main", default: true, imageModel: "openai/gpt-4o-mini" },
          { id: "plain" },
          { id: "blind", imageModel: "openai/gpt-3.5-turbo" },
        ],
      },
    });
    // a 600 x 300 photo in the workspace: above media.imageMaxPx, so the runner scales it down
    writeFileSync(join(system.workspace, "photo.png"), await flatImage(600, 300).png().toBuffer());
    writeFileSync(join(system.nats.dir, "outside.png"), await flatImage(20, 20).png().toBuffer());
    for (const id of ["plain", "blind"]) mkdirSync(join(system.nats.home, `workspace-${id}`), { recursive: true });
    nc = await system.nats.connect("cli");
    bus = new BusClient(nc);
    agentNc = await system.nats.connect("agent-runner");
    agentBus = new BusClient(agentNc);
    cli = await CliClient.connect(system.nats, "image-test");
    media = new MediaStore(nc, { ...MEDIA_DEFAULTS });
  });

  after(async () => {
    await cli?.close();
    await nc?.close();
    await agentNc?.close();
    await system?.stop();
  });

  it("a run asks about a workspace image: the image model gets the scaled image and the question, the run's model gets the answer", async () => {
    const first = system.fake.requests.length;
    system.fake.enqueue(
      { kind: "tool_calls", calls: [{ id: "call_img", name: "image", arguments: { path: "photo.png", prompt: "What colour is it?" } }] },
      { kind: "text", text: "A flat magenta rectangle." },
      { kind: "text", text: "The photo is magenta." },
    );
    const reply = await cli.send("what is in photo.png?", { timeoutMs: 40_000 });
    assert.equal(reply.text, "The photo is magenta.");
    const [turn, describeCall, next] = system.fake.requests.slice(first);
    assert.ok(turn!.body.tools?.some((t) => t.function.name === "image"), "the run's catalog offers image");
    // the describe call: the image model, no tools, one user message with the image and the question
    assert.equal(describeCall!.body.model, "gpt-4o-mini");
    assert.equal(describeCall!.body.tools, undefined);
    const user = describeCall!.body.messages.filter((m) => m.role === "user");
    assert.equal(user.length, 1);
    assert.match(JSON.stringify(user[0]!.content), /What colour is it\?/);
    const [url] = imageParts(describeCall!.body.messages);
    const match = /^data:(image\/[a-z]+);base64,(.+)$/.exec(url ?? "");
    assert.ok(match, `an image part as a data URL: ${url?.slice(0, 60)}`);
    const sent = await decodedImage(Buffer.from(match[2]!, "base64"));
    assert.deepEqual([sent.width, sent.height], [MAX_PX, MAX_PX / 2], "scaled down to media.imageMaxPx, aspect kept");
    // the tool result the run's model reads
    const toolMessage = next!.body.messages.find((m) => m.role === "tool");
    assert.match(String(toolMessage?.content), /^photo\.png \(as openai\/gpt-4o-mini sees it, scaled down\):\nA flat magenta rectangle\.$/);
    assert.equal(imageParts(next!.body.messages).length, 0, "the run's model gets text, not the image");
    // the describe call's tokens are booked under purpose image
    const row = await waitFor(async () => {
      const rows = (await bus.call("sessions", "usage_report", { from: utcDay(Date.now()), groupBy: ["model", "purpose"], agentId: "main" })).rows;
      return rows.find((r) => r.purpose === "image" && r.total > 0);
    }, 15_000, "the image row of the usage ledger");
    assert.match(row.model ?? "", /gpt-4o-mini/);
  });

  it("takes a media ref of the conversation too", async () => {
    const stored = await media.put(await flatImage(40, 30).png().toBuffer(), { mime: "image/png", name: "sent.png" });
    const first = system.fake.requests.length;
    system.fake.enqueue({ kind: "text", text: "A small rectangle." });
    const r = await tool({ ref: stored.ref });
    assert.equal(r.isError, false, text(r));
    assert.match(text(r), new RegExp(`^media ${stored.ref.slice(0, 12)}… \\(as openai/gpt-4o-mini sees it\\):\\nA small rectangle\\.$`));
    const call = system.fake.requests[first]!;
    assert.match(JSON.stringify(call.body.messages), /Describe the image in detail\./, "the default question");
    assert.equal(imageParts(call.body.messages).length, 1);
  });

  it("refuses a path outside the workspace, a file that is not an image, and a model without vision", async () => {
    const asked = system.fake.requests.length;
    const outside = await tool({ path: "../outside.png" });
    assert.equal(outside.isError, true);
    assert.equal(outside.errorCode, "PATH_ESCAPE");
    assert.match(text(outside), /outside the workspace/);
    const absolute = await tool({ path: join(system.nats.dir, "outside.png") });
    assert.equal(absolute.errorCode, "PATH_ESCAPE");
    const notImage = await tool({ path: "notes.txt" });
    assert.equal(notImage.errorCode, "TOOL_INVALID_ARGS");
    assert.match(text(notImage), /"notes\.txt" is not a PNG, JPEG, GIF or WebP image/);
    const storedText = await media.put(Buffer.from("plain text, not pixels\n"), { mime: "text/plain", name: "a.txt" });
    const notImageRef = await tool({ ref: storedText.ref });
    assert.equal(notImageRef.errorCode, "VALIDATION_FAILED");
    assert.match(text(notImageRef), /"a\.txt" cannot be given to the image model/);
    const both = await tool({ path: "photo.png", ref: storedText.ref });
    assert.match(text(both), /give exactly one of path .* or ref/);
    const photo = await media.put(await flatImage(10, 10).png().toBuffer(), { mime: "image/png" });
    const blind = await tool({ ref: photo.ref }, "blind");
    assert.equal(blind.errorCode, "VALIDATION_FAILED");
    assert.match(text(blind), /the image model openai\/gpt-3\.5-turbo does not take images/);
    // only the tools NATS user may ask the agent-runner (nats.conf): the operator's console cannot spend on it
    const stranger = await bus.call("agent-runner", "describe_image", { ref: photo.ref, agentId: "main" }, { timeoutMs: 3_000 }).then(() => "answered", (err: Error & { code?: string }) => err.code ?? err.message);
    assert.notEqual(stranger, "answered");
    assert.match(stranger, /PERMISSION|UNAVAILABLE/i);
    assert.equal(system.fake.requests.length, asked, "no refused call reached the provider");
  });

  it("is absent for an agent without an image model, and a call of it anyway is NO_MODEL", async () => {
    const names = async (agentId: string) => (await bus.call("tools", "list", { agentId })).tools.map((t) => t.name);
    assert.ok((await names("main")).includes("image"));
    assert.ok(!(await names("plain")).includes("image"));
    const explained = await bus.call("tools", "explain", { agentId: "plain" });
    const decision = explained.decisions.find((d) => d.tool === "image");
    assert.deepEqual([decision?.allowed, decision?.layer], [false, "actor"]);
    assert.match(decision!.rule, /no image model is configured for this agent \(set tools\.image\.model or agents\[\]\.imageModel/);
    assert.equal((await bus.call("tools", "explain", { agentId: "main" })).decisions.find((d) => d.tool === "image")?.allowed, true);
    const r = await tool({ path: "photo.png" }, "plain");
    assert.equal(r.errorCode, "NO_MODEL");
    assert.match(text(r), /no image model is configured/);
  });

  it("a rate-limited auth profile hands the question to the next one", async () => {
    const photo = await media.put(await flatImage(12, 12).png().toBuffer(), { mime: "image/png" });
    const first = system.fake.requests.length;
    system.fake.enqueue({ kind: "error", status: 429, message: "Rate limit reached" }, { kind: "text", text: "Seen by the backup." });
    const r = await tool({ ref: photo.ref, prompt: "Anything?" });
    assert.equal(r.isError, false, text(r));
    assert.match(text(r), /Seen by the backup\.$/);
    const [limited, answered] = system.fake.requests.slice(first);
    assert.ok(limited && answered, "two provider calls");
    assert.notEqual(limited.headers.authorization, answered.headers.authorization, "the second call used the other profile's key");
    assert.equal(imageParts(answered.body.messages).length, 1);
  });
});
