/**
 * The webhook channel against the whole system (real nats-server, every actor a process, the
 * fake LLM) with a local callback receiver: a signed request is answered 202 once persisted
 * and its reply comes back as a signed callback; a bad signature, a stale timestamp or missing
 * headers are refused (401) and start nothing; the same id sent twice runs once and is answered
 * once; a failing receiver (500) gets the callback again, the same delivery, until it accepts.
 * The DM policy is "pairing": a signed request is an authenticated peer and is answered, never
 * given a pairing code. Files: a request's `dataBase64` files go into the media store and the
 * inbound message carries their refs (bad base64: 400, above media.maxFileMb: 413); an agent's
 * file comes back as a callback with its bytes.
 */
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { encodeToken, envelope, inboundMessageSchema, STREAMS, subjects } from "../shared/contract/index.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { sign, verify } from "../services/channel-webhook/signature.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";
import { messageText } from "./fakes/openai-server.js";
import { WebhookReceiver } from "./fakes/webhook-receiver.js";

const SECRET = "webhook-test-secret-0123456789abcdef";
const S = subjects();
/** media.maxFileMb of this test (~51 KB), below the body cap, so an over-cap file is refused by the file check */
const MAX_FILE_MB = 0.05;
const MAX_FILE_BYTES = Math.floor(MAX_FILE_MB * 1024 * 1024);
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("webhook channel: signed requests in, signed callbacks out", () => {
  let system: TestSystem;
  let receiver: WebhookReceiver;
  let channel: ActorProcess;
  let url: string;

  const post = (body: unknown, opts: { secret?: string; timestamp?: number; headers?: Record<string, string>; raw?: string } = {}) => {
    const raw = opts.raw ?? JSON.stringify(body);
    const ts = opts.timestamp ?? Math.floor(Date.now() / 1000);
    return fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-lurkbot-timestamp": String(ts), "x-lurkbot-signature": sign(opts.secret ?? SECRET, ts, raw), ...opts.headers },
      body: raw,
    });
  };
  const llmSaw = (text: string) => system.fake.requests.filter((r) => messageText(r.body.messages.filter((m) => m.role === "user").at(-1)).includes(text)).length;
  const callbacksFor = (id: string) => receiver.matching((b) => Array.isArray(b?.replyTo) && b.replyTo.includes(id));

  before(async () => {
    receiver = await WebhookReceiver.start();
    const port = await freePort();
    system = await TestSystem.start({ config: {
      channels: { webhook: { enabled: true, port, secret: SECRET, callbackUrl: receiver.url, maxBodyBytes: 1024 * 1024 } },
      routing: { dm: { policy: "pairing" } },
      media: { maxFileMb: MAX_FILE_MB },
    } });
    channel = await startActorProcess("channel-webhook", system.nats, system.env);
    url = `http://127.0.0.1:${port}/v1/messages`;
  });

  after(async () => {
    await channel?.stop();
    await receiver?.close();
    await system?.stop();
  });

  it("a signed request is accepted (202) and answered by a signed callback", async () => {
    const res = await post({ id: "msg-1", text: "hello hook", conversation: "thread 42", sender: { id: "u1", name: "Una" } });
    assert.equal(res.status, 202);
    const accepted = (await res.json()) as { accepted: boolean; id: string; runId: string; duplicate: boolean };
    assert.equal(accepted.accepted, true);
    assert.equal(accepted.duplicate, false);
    assert.match(accepted.runId, /^run-/);
    const [cb] = await waitFor(() => { const c = callbacksFor("msg-1"); return c.length ? c : null; }, 20_000, "the callback");
    assert.equal(cb!.body.text, "echo: hello hook");
    assert.equal(cb!.body.conversation, "thread 42");
    assert.equal(cb!.body.kind, "reply");
    assert.equal(cb!.body.runId, accepted.runId);
    assert.deepEqual(cb!.body.part, { index: 0, count: 1 });
    const headers = { timestamp: cb!.headers["x-lurkbot-timestamp"] as string, signature: cb!.headers["x-lurkbot-signature"] as string };
    assert.deepEqual(verify(SECRET, headers, Buffer.from(cb!.raw), 300), { ok: true }, "the callback is signed with the shared secret");
    assert.equal(verify("another-secret-0123456789", headers, Buffer.from(cb!.raw), 300).ok, false);
    assert.equal(cb!.headers["x-lurkbot-delivery"], `${cb!.body.deliveryId}:0`);
  });

  it("a bad signature, a stale timestamp or missing headers are refused and start nothing", async () => {
    const body = { id: "msg-bad", text: "forged request" };
    const wrongKey = await post(body, { secret: "not-the-secret-0123456789" });
    assert.equal(wrongKey.status, 401);
    assert.equal(((await wrongKey.json()) as { error: { code: string } }).error.code, "bad_signature");
    assert.equal((await post(body, { timestamp: Math.floor(Date.now() / 1000) - 3600 })).status, 401);
    const tampered = await post(body, { headers: { "x-lurkbot-signature": sign(SECRET, Math.floor(Date.now() / 1000), JSON.stringify({ ...body, text: "other" })) } });
    assert.equal(tampered.status, 401);
    const bare = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    assert.equal(bare.status, 401);
    // a signed but malformed body is a 400, and the channel keeps serving
    assert.equal((await post(null, { raw: "{nope" })).status, 400);
    assert.equal((await post({ text: "no id" })).status, 400);
    const ok = await post({ id: "msg-after-bad", text: "still served" });
    assert.equal(ok.status, 202);
    await waitFor(() => callbacksFor("msg-after-bad").length === 1, 20_000, "the callback after the refusals");
    assert.equal(llmSaw("forged request"), 0);
  });

  it("the same id sent twice runs once and is answered once", async () => {
    const body = { id: "msg-dup", text: "only once please" };
    const first = await post(body);
    const second = await post(body);
    assert.equal(first.status, 202);
    assert.equal(second.status, 202);
    const a = (await first.json()) as { runId: string; duplicate: boolean };
    const b = (await second.json()) as { runId: string; duplicate: boolean };
    assert.equal(a.duplicate, false);
    assert.equal(b.duplicate, true);
    assert.equal(b.runId, a.runId);
    await waitFor(() => callbacksFor("msg-dup").length === 1, 20_000, "the callback");
    // one more message through the same session: by its reply, the duplicate would have run
    await post({ id: "msg-dup-after", text: "after the duplicate" });
    await waitFor(() => callbacksFor("msg-dup-after").length === 1, 20_000, "the next callback");
    assert.equal(llmSaw("only once please"), 1);
    assert.equal(callbacksFor("msg-dup").length, 1);
  });

  it("a failing receiver gets the same signed callback again until it accepts", async () => {
    let refusals = 0;
    receiver.answer = (body) => (Array.isArray(body?.replyTo) && body.replyTo.includes("msg-retry") && refusals++ < 2 ? 500 : 200);
    assert.equal((await post({ id: "msg-retry", text: "retry me" })).status, 202);
    const calls = await waitFor(() => { const c = callbacksFor("msg-retry"); return c.length >= 3 && c.at(-1)!.status === 200 ? c : null; }, 40_000, "the accepted retry");
    assert.deepEqual(calls.map((c) => c.status), [500, 500, 200]);
    assert.equal(new Set(calls.map((c) => c.body.deliveryId)).size, 1, "the same delivery each time");
    assert.equal(new Set(calls.map((c) => c.headers["x-lurkbot-delivery"])).size, 1, "the same idempotency key each time");
    for (const c of calls) {
      assert.ok(verify(SECRET, { timestamp: c.headers["x-lurkbot-timestamp"] as string, signature: c.headers["x-lurkbot-signature"] as string }, Buffer.from(c.raw), 300).ok);
      assert.equal(c.body.text, "echo: retry me");
    }
    receiver.answer = () => 200;
  });
  const inboundById = async (id: string) => {
    const admin = await system.nats.connect("admin");
    try {
      const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("webhook") });
      const msg = inboundMessageSchema.parse(m!.json());
      return msg.id === id ? msg : undefined;
    } finally {
      await admin.close();
    }
  };
  const withStore = async <T>(fn: (store: MediaStore) => Promise<T>): Promise<T> => {
    const nc = await system.nats.connect("channel-webhook");
    try {
      return await fn(new MediaStore(nc, { ...MEDIA_DEFAULTS, maxFileMb: MAX_FILE_MB }));
    } finally {
      await nc.close();
    }
  };

  it("files sent as dataBase64 are stored in the media store; the inbound message carries their refs, never the bytes", async () => {
    const text = Buffer.from(`minutes of the meeting ${randomUUID()}\n`);
    const res = await post({ id: "msg-files", text: "two files", conversation: "files", attachments: [
      { name: "minutes.txt", dataBase64: text.toString("base64") },
      { kind: "image", mime: "image/png", name: "dot.png", dataBase64: PNG.toString("base64").replace(/(.{20})/g, "$1\n") },
      { kind: "file", mime: "application/pdf", name: "remote.pdf", url: "https://example.org/remote.pdf" },
    ] });
    assert.equal(res.status, 202, await res.clone().text());
    const msg = await waitFor(() => inboundById("msg-files"), 10_000, "the inbound message");
    assert.deepEqual(msg.attachments, [
      { kind: "file", mime: "text/plain", name: "minutes.txt", size: text.length, ref: sha256(text) },
      { kind: "image", mime: "image/png", name: "dot.png", size: PNG.length, ref: sha256(PNG) },
      { kind: "file", mime: "application/pdf", name: "remote.pdf", url: "https://example.org/remote.pdf" },
    ]);
    assert.deepEqual(Buffer.from((await withStore((s) => s.get(sha256(text)))).bytes), text);
    assert.deepEqual(Buffer.from((await withStore((s) => s.get(sha256(PNG)))).bytes), PNG);
    await waitFor(() => callbacksFor("msg-files").length >= 1, 20_000, "the reply");
  });

  it("a file with bad base64 (400) or above media.maxFileMb (413) is refused and starts nothing; the corrected request is accepted", async () => {
    const bad = await post({ id: "msg-bad-file", text: "bad file", attachments: [{ name: "x.bin", dataBase64: "not base64!!" }] });
    assert.equal(bad.status, 400);
    const badError = ((await bad.json()) as { error: { code: string; message: string } }).error;
    assert.equal(badError.code, "invalid_attachment");
    assert.match(badError.message, /"x\.bin".*base64/);
    const big = await post({ id: "msg-bad-file", text: "bad file", attachments: [{ name: "big.bin", dataBase64: Buffer.alloc(MAX_FILE_BYTES + 1, 1).toString("base64") }] });
    assert.equal(big.status, 413);
    const bigError = ((await big.json()) as { error: { code: string; message: string } }).error;
    assert.equal(bigError.code, "file_too_large");
    assert.match(bigError.message, /"big\.bin" is .*media\.maxFileMb/);
    assert.equal((await post({ id: "msg-bad-file", text: "bad file", attachments: [{ name: "none.txt" }] })).status, 400, "no bytes, url or ref");
    assert.equal(await inboundById("msg-bad-file"), undefined, "nothing published");

    const fixed = await post({ id: "msg-bad-file", text: "fixed file", attachments: [{ name: "ok.txt", dataBase64: Buffer.from("fine").toString("base64") }] });
    assert.equal(fixed.status, 202);
    assert.equal(((await fixed.json()) as { duplicate: boolean }).duplicate, false);
    await waitFor(() => callbacksFor("msg-bad-file").length === 1, 20_000, "the reply to the corrected request");
    assert.equal(llmSaw("bad file"), 0);
  });

  it("the agent's files come back as callbacks with their bytes (dataBase64); an expired one as a text callback", async () => {
    const csvBytes = Buffer.from(`a,b\n1,${randomUUID()}\n`);
    const csv = await withStore((s) => s.put(csvBytes, { mime: "text/csv", name: "table.csv" }));
    const conversation = encodeToken("files out");
    const out = envelope("lurk.outbound.message.v1", { channel: "webhook", conversation, kind: "reply", replyTo: [], text: "Here is the table.", attachments: [
      { kind: "file", mime: "text/csv", name: "table.csv", size: csv.size, ref: csv.ref },
      { kind: "file", mime: "application/pdf", name: "gone.pdf", ref: "f".repeat(64) },
    ] });
    const admin = await system.nats.connect("admin");
    await jetstream(admin).publish(S.outbound("webhook", conversation), JSON.stringify(out), { msgID: out.id });
    await admin.close();
    const calls = await waitFor(() => {
      const c = receiver.matching((b) => b?.deliveryId === out.id);
      return c.length === 3 ? c.sort((x, y) => x.body.part.index - y.body.part.index) : undefined;
    }, 20_000, "three callbacks");
    assert.deepEqual(calls.map((c) => c.body.part), [{ index: 0, count: 3 }, { index: 1, count: 3 }, { index: 2, count: 3 }]);
    assert.equal(calls[0]!.body.text, "Here is the table.");
    assert.deepEqual(calls[0]!.body.attachments, []);
    assert.equal(calls[1]!.body.text, "");
    assert.deepEqual(calls[1]!.body.attachments, [{ kind: "file", mime: "text/csv", name: "table.csv", size: csvBytes.length, ref: csv.ref, dataBase64: csvBytes.toString("base64") }]);
    assert.equal(calls[1]!.body.conversation, "files out");
    assert.ok(verify(SECRET, { timestamp: calls[1]!.headers["x-lurkbot-timestamp"] as string, signature: calls[1]!.headers["x-lurkbot-signature"] as string }, Buffer.from(calls[1]!.raw), 300).ok, "signed");
    assert.match(calls[2]!.body.text, /^\[file: gone\.pdf could not be sent: .*not in the media store/);
    assert.deepEqual(calls[2]!.body.attachments, []);
  });
});
