/**
 * nats.conf permissions, against a real nats-server running the contract's config: no anonymous
 * access, an actor cannot publish or subscribe outside its contract, and no actor can read
 * another actor's replies (per-actor inbox prefixes).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { TestNats } from "./harness/nats.js";

/** Subscribes; resolves with the server's permission error, or null if the subscription stays open. */
async function trySubscribe(nc: NatsConnection, subject: string): Promise<Error | null> {
  const sub = nc.subscribe(subject);
  const failed = (async () => {
    try {
      for await (const _ of sub) { /* a permitted subscription just waits */ }
      return null;
    } catch (err) {
      return err as Error;
    }
  })();
  await nc.flush();
  const result = await Promise.race([failed, new Promise<"open">((r) => setTimeout(() => r("open"), 300))]);
  if (result === "open") {
    sub.unsubscribe();
    return null;
  }
  return result;
}

/** Publishes as `from` and reports whether the admin watcher received it. */
async function delivered(nats: TestNats, from: NatsConnection, subject: string): Promise<boolean> {
  const admin = await nats.connect("admin");
  const sub = admin.subscribe(subject, { max: 1 });
  await admin.flush();
  from.publish(subject, "probe");
  await from.flush().catch(() => undefined);
  const got = await Promise.race([(async () => { for await (const _ of sub) return true; return false; })(), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
  await admin.close();
  return got;
}

describe("nats.conf permissions", () => {
  let nats: TestNats;
  before(async () => {
    nats = await TestNats.start({ streams: false });
  });
  after(async () => nats?.stop());

  it("refuses anonymous connections and wrong passwords", async () => {
    await assert.rejects(connect({ servers: nats.url, reconnect: false }));
    await assert.rejects(connect({ servers: nats.url, user: "router", pass: "wrong", reconnect: false }));
  });

  const forbiddenPublish: Array<[string, string]> = [
    ["tools", "lurk.in.cli"], // tools cannot impersonate a channel
    ["channel-telegram", "lurk.in.discord"], // a channel publishes only its own inbound
    ["channel-telegram", "lurk.run.req.main"], // channels cannot start runs directly
    ["sessions", "lurk.out.cli.x"], // sessions delivers nothing
    ["agent-runner", "lurk.inject.main"],
    ["router", "lurk.evt.sessions.reset"], // events only under one's own name
    ["cli", "lurk.run.req.main"],
    // embeddings cost money: only the tools actor may ask the agent-runner for them
    ["cli", "lurk.agent-runner.embed"],
    ["router", "lurk.agent-runner.embed"],
    ["channel-web", "lurk.agent-runner.embed"],
    ["tools-ext", "lurk.agent-runner.embed"],
    // so does speech: only the tools actor (its tts tool) may ask for a voice message
    ["cli", "lurk.agent-runner.speak"],
    ["channel-telegram", "lurk.agent-runner.speak"],
    ["tools-ext", "lurk.agent-runner.speak"],
    // the auth profiles' state: the operator's console and the router's /status only; probes (real calls) the console only
    ["channel-web", "lurk.agent-runner.auth_state"],
    ["channel-telegram", "lurk.agent-runner.auth_state"],
    ["tools", "lurk.agent-runner.auth_state"],
    ["router", "lurk.agent-runner.auth_probe"],
    ["channel-web", "lurk.agent-runner.auth_probe"],
    // the hooks actor: its deliveries, system events, sessions.get and sessions.history only
    ["hooks", "lurk.run.req.main"],
    ["hooks", "lurk.sessions.append"],
    ["hooks", "lurk.sessions.list"],
    ["hooks", "lurk.in.cli"],
    ["hooks", "lurk.sessions.reset"],
    ["hooks", "lurk.tools.call.exec"],
    ["hooks", "lurk.evt.router.command"],
  ];
  for (const [user, subject] of forbiddenPublish) {
    it(`${user} cannot publish ${subject}`, async () => {
      const nc = await nats.connect(user, { reconnect: false });
      assert.equal(await delivered(nats, nc, subject), false);
      await nc.close();
    });
  }

  const allowedPublish: Array<[string, string]> = [
    ["router", "lurk.run.req.main"],
    ["channel-telegram", "lurk.in.telegram"],
    ["agent-runner", "lurk.run.evt.r1"],
    ["sessions", "lurk.evt.sessions.reset"],
    ["tools", "lurk.agent-runner.embed"],
    ["tools", "lurk.agent-runner.speak"],
    ["cli", "lurk.agent-runner.auth_state"],
    ["cli", "lurk.agent-runner.auth_probe"],
    ["router", "lurk.agent-runner.auth_state"],
    ["hooks", "lurk.out.cli.main"],
    ["hooks", "lurk.inject.main"],
    ["hooks", "lurk.sessions.get"],
    ["hooks", "lurk.sessions.history"],
    ["hooks", "lurk.evt.hooks.failed"],
    ["hooks", "lurk.evt.hooks.reloaded"],
    ["cli", "lurk.hooks.reload"],
    ["router", "lurk.evt.router.command"],
  ];
  for (const [user, subject] of allowedPublish) {
    it(`${user} can publish ${subject}`, async () => {
      const nc = await nats.connect(user, { reconnect: false });
      assert.equal(await delivered(nats, nc, subject), true);
      await nc.close();
    });
  }

  const forbiddenSubscribe: Array<[string, string]> = [
    ["agent-runner", "_INBOX_router.>"], // another actor's replies
    ["tools", "_INBOX_agent-runner.>"],
    ["channel-web", "_INBOX_cli.>"],
    ["tools", "lurk.in.>"], // inbound user messages
    ["channel-telegram", "lurk.out.discord.>"],
    ["sessions", "lurk.run.evt.>"],
    ["router", ">"],
    ["router", "lurk.run.evt.>"], // the router sees only terminal run events
    ["router", "lurk.run.evt.r1.message_delta"],
    ["browser", "lurk.tools.call.read"], // the browser answers its own tools only
    ["browser", "lurk.tools.call.>"],
    ["channel-web", "lurk.tools.call.exec"], // the web channel answers its canvas tool only
    ["channel-web", "lurk.tools.call.>"],
    ["channel-web", "lurk.evt.>"], // only the sessions' reset and delete events (its canvas)
    ["channel-telegram", "lurk.tools.call.canvas"],
    // the mcp actor answers MCP tools' calls only (names mcp_*, lurk.tools.call.mcp.<name>), never a built-in tool's
    ["mcp", "lurk.tools.call.exec"],
    ["mcp", "lurk.tools.call.>"],
    ["mcp", "lurk.tools.call.mcp_local_echo"],
    // hooks: command and reset events and run ends, not the rest of the bus
    ["hooks", "lurk.run.evt.>"],
    ["hooks", "lurk.in.>"],
    ["hooks", "lurk.evt.>"],
    // commands, resets and new sessions reach it through its durable consumer of LURK_HOOK_EVENTS only
    ["hooks", "lurk.evt.router.command"],
    ["hooks", "lurk.evt.sessions.reset"],
    ["hooks", "_INBOX_router.>"],
  ];
  for (const [user, subject] of forbiddenSubscribe) {
    it(`${user} cannot subscribe ${subject}`, async () => {
      const nc = await nats.connect(user, { reconnect: false });
      const err = await trySubscribe(nc, subject);
      assert.ok(err, "the server refused the subscription");
      assert.match(err.message, /permission/i);
      await nc.close();
    });
  }

  // lurk.tools.explain: every actor serving tools answers `lurkbot tools --explain` for its own (shared/runtime/tool-serve.ts)
  for (const [user, subject] of [["router", "lurk.run.evt.*.done"], ["channel-telegram", "lurk.run.evt.>"], ["cli", "lurk.out.cli.>"], ["tools", "_INBOX_tools.>"], ["browser", "lurk.tools.explain"], ["tools-ext", "lurk.tools.explain"], ["browser", "lurk.tools.call.browser_evaluate"], ["channel-web", "lurk.tools.call.canvas"], ["channel-web", "lurk.tools.list"], ["channel-web", "lurk.evt.sessions.reset"], ["channel-web", "lurk.evt.sessions.delete"], ["hooks", "lurk.run.evt.*.error"], ["mcp", "lurk.tools.call.mcp.mcp_local_echo"], ["mcp", "lurk.tools.call.mcp.>"]] as const) {
    it(`${user} can subscribe ${subject}`, async () => {
      const nc = await nats.connect(user, { reconnect: false });
      assert.equal(await trySubscribe(nc, subject), null);
      await nc.close();
    });
  }

  it("a reply to one actor's request never reaches another actor listening on its inbox", async () => {
    const sessions = await nats.connect("sessions");
    sessions.subscribe("lurk.sessions.get", { callback: (_e, m) => void m.respond("secret-reply") });
    await sessions.flush();
    const router = await nats.connect("router");
    const spy = await nats.connect("agent-runner", { reconnect: false });
    assert.ok(await trySubscribe(spy, "_INBOX_router.>"), "the spy cannot subscribe to the router's inbox");
    const reply = await router.request("lurk.sessions.get", "{}", { timeout: 2000 });
    assert.equal(reply.string(), "secret-reply");
    await Promise.all([sessions.close(), router.close(), spy.close()]);
  });

  it("a responder may answer a request it received (allow_responses) but not publish on that inbox later", async () => {
    const sessions = await nats.connect("sessions");
    let replyTo = "";
    sessions.subscribe("lurk.sessions.list", { callback: (_e, m) => { replyTo = m.reply ?? ""; m.respond("first"); } });
    await sessions.flush();
    const router = await nats.connect("router");
    assert.equal((await router.request("lurk.sessions.list", "{}", { timeout: 2000 })).string(), "first");
    const watch = router.subscribe(replyTo, { max: 1 });
    await router.flush();
    sessions.publish(replyTo, "late");
    await sessions.flush();
    const late = await Promise.race([(async () => { for await (const m of watch) return m.string(); return null; })(), new Promise<null>((r) => setTimeout(() => r(null), 300))]);
    assert.equal(late, null);
    await Promise.all([sessions.close(), router.close()]);
  });
});
