import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  decodeToken, encodeToken, ENDPOINTS, envelope, inboundMessageSchema, LurkError, OPERATIONS, renderNatsConf,
  requestType, runEventSchema, safeParseJson, subjects, token, cronAddRequest,
} from "../shared/contract/index.js";
import { exportContract } from "../shared/contract/export.js";
import { CONTRACT_JSON_PATH, NATS_CONF_PATH } from "../shared/scripts/paths.js";

describe("subject builders", () => {
  const bad = ["", "a.b", "a*", ">", "a b", "tab\t", "new\nline", "x".repeat(129)];
  for (const value of bad) {
    it(`rejects token ${JSON.stringify(value).slice(0, 20)}`, () => {
      assert.throws(() => token(value), (err: unknown) => LurkError.is(err) && err.code === "BAD_SUBJECT_TOKEN");
      assert.throws(() => subjects().inbound(value));
      assert.throws(() => subjects().runEvent(value, "done"));
      assert.throws(() => subjects().runEvent("r1", value));
    });
  }
  it("builds the contract's subjects", () => {
    const s = subjects("lurk");
    assert.equal(s.inbound("cli"), "lurk.in.cli");
    assert.equal(s.runRequest("main"), "lurk.run.req.main");
    assert.equal(s.outbound("telegram", "c1"), "lurk.out.telegram.c1");
    assert.equal(s.op("sessions", "history"), "lurk.sessions.history");
    assert.equal(s.toolCall("read"), "lurk.tools.call.read");
    assert.throws(() => subjects("lu.rk"));
  });
  it("encodes any platform id into a token and back", () => {
    for (const raw of ["-1001234567890", "a.b c*>", "用户 42", "x~y"]) {
      const encoded = encodeToken(raw);
      assert.doesNotThrow(() => token(encoded));
      assert.equal(decodeToken(encoded), raw);
    }
  });
});

describe("safe JSON", () => {
  it("refuses prototype keys anywhere", () => {
    for (const text of ['{"__proto__":{"x":1}}', '{"a":{"constructor":{"prototype":{}}}}', '[{"prototype":1}]']) {
      assert.throws(() => safeParseJson(text), (e: unknown) => LurkError.is(e) && e.code === "UNSAFE_PAYLOAD");
    }
    assert.equal(({} as Record<string, unknown>).x, undefined);
  });
  it("caps size and depth and reports bad JSON", () => {
    assert.throws(() => safeParseJson("x".repeat(100), { maxBytes: 10 }), (e: unknown) => LurkError.is(e) && e.code === "PAYLOAD_TOO_LARGE");
    assert.throws(() => safeParseJson("[".repeat(100) + "]".repeat(100), { maxDepth: 64 }), (e: unknown) => LurkError.is(e) && e.code === "UNSAFE_PAYLOAD");
    assert.throws(() => safeParseJson("{nope"), (e: unknown) => LurkError.is(e) && e.code === "BAD_JSON");
    assert.deepEqual(safeParseJson('{"a":[1,{"b":2}]}'), { a: [1, { b: 2 }] });
  });
  it("counts only the brackets outside strings, past escaped quotes and backslashes", () => {
    const brackets = "[{".repeat(100);
    // inside strings, also after an escaped quote or an escaped backslash: not nesting
    const inStrings = JSON.stringify({ a: brackets, b: `say "${brackets}"`, c: `dir\\${brackets}`, d: [`\\"${brackets}`] });
    assert.equal((safeParseJson(inStrings, { maxDepth: 2 }) as { a: string }).a, brackets);
    // a string that ends in an escaped backslash closes there: what follows is structure again
    const afterString = `{"a":"x\\\\",${'"b":'.concat("[".repeat(5), "]".repeat(5))}}`;
    assert.deepEqual(safeParseJson(afterString, { maxDepth: 6 }), { a: "x\\", b: [[[[[]]]]] });
    assert.throws(() => safeParseJson(afterString, { maxDepth: 5 }), (e: unknown) => LurkError.is(e) && e.code === "UNSAFE_PAYLOAD");
  });
});

describe("schemas", () => {
  it("every operation has an endpoint whose request type is versioned by name", () => {
    for (const [actor, ops] of Object.entries(OPERATIONS)) {
      for (const op of ops) {
        const spec = (ENDPOINTS as Record<string, Record<string, { request: { safeParse(v: unknown): { success: boolean } } }>>)[actor]![op];
        assert.ok(spec, `${actor}.${op} has an endpoint`);
        const type = requestType(actor as never, op);
        assert.equal(spec.request.safeParse({ type: "lurk.wrong.v1", id: "x", ts: 1 }).success, false);
        assert.match(type, /^lurk\.[a-z-]+\.[a-z][a-z_]*\.v1$/);
      }
    }
  });
  it("validates an inbound message and fills defaults", () => {
    const msg = inboundMessageSchema.parse(envelope("lurk.inbound.message.v1", {
      channel: "cli", conversation: "c1", peer: { kind: "dm", id: "me" }, sender: { id: "me" }, text: "hi",
    }));
    assert.deepEqual(msg.attachments, []);
    assert.equal(msg.mentioned, false);
    assert.equal(inboundMessageSchema.safeParse({ ...msg, channel: "Bad Channel" }).success, false);
  });
  it("run events are a tagged union with one terminal kind each", () => {
    const base = { type: "lurk.run.event.v1", id: "e1", ts: 1, runId: "r1", sessionKey: "agent:main:main", seq: 0 };
    assert.ok(runEventSchema.safeParse({ ...base, event: { kind: "done", text: "x", turns: 1, usage: {} } }).success);
    assert.equal(runEventSchema.safeParse({ ...base, event: { kind: "done" } }).success, false);
    assert.equal(runEventSchema.safeParse({ ...base, event: { kind: "nope" } }).success, false);
  });
  it("cron jobs follow the seeds' target/payload rule", () => {
    const job = { type: "lurk.cron.add.v1", id: "1", ts: 1, name: "x", schedule: { kind: "every", everyMs: 60000 } };
    assert.ok(cronAddRequest.safeParse({ ...job, sessionTarget: "main", payload: { kind: "systemEvent", text: "hi" } }).success);
    assert.equal(cronAddRequest.safeParse({ ...job, sessionTarget: "main", payload: { kind: "agentTurn", message: "hi" } }).success, false);
    assert.equal(cronAddRequest.safeParse({ ...job, sessionTarget: "isolated", payload: { kind: "systemEvent", text: "hi" } }).success, false);
  });
});

describe("exports", () => {
  it("the committed JSON Schema export matches the code (run `npm run contract:export`)", () => {
    const committed = JSON.parse(readFileSync(CONTRACT_JSON_PATH, "utf8"));
    assert.deepEqual(committed, JSON.parse(JSON.stringify(exportContract())));
  });
  it("the committed nats.conf matches the contract's users (run `npm run contract:export`)", () => {
    assert.equal(readFileSync(NATS_CONF_PATH, "utf8"), renderNatsConf());
  });
  it("nats.conf has no anonymous user and no secret", () => {
    const conf = renderNatsConf();
    assert.doesNotMatch(conf, /no_auth_user/);
    assert.ok([...conf.matchAll(/password: (\S+)/g)].every((m) => m[1]!.startsWith("$LURKBOT_NATS_PASS_")));
  });
});
