/**
 * The webhook channel against the whole system (real nats-server, every actor a process, the
 * fake LLM) with a local callback receiver: a signed request is answered 202 once persisted
 * and its reply comes back as a signed callback; a bad signature, a stale timestamp or missing
 * headers are refused (401) and start nothing; the same id sent twice runs once and is answered
 * once; a failing receiver (500) gets the callback again, the same delivery, until it accepts.
 * The DM policy is "pairing": a signed request is an authenticated peer and is answered, never
 * given a pairing code.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { sign, verify } from "../services/channel-webhook/signature.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";
import { messageText } from "./fakes/openai-server.js";
import { WebhookReceiver } from "./fakes/webhook-receiver.js";

const SECRET = "webhook-test-secret-0123456789abcdef";

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
    system = await TestSystem.start({ config: { channels: { webhook: { enabled: true, port, secret: SECRET, callbackUrl: receiver.url } }, routing: { dm: { policy: "pairing" } } } });
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
});
