/**
 * nats-server is SIGKILLed while inbound messages flow, then restarted on the same port and
 * store. Every inbound message the server acknowledged must be answered exactly once: the
 * OUTBOUND stream holds one reply per acked message and none twice.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { outboundMessageSchema, STREAMS } from "../shared/contract/index.js";
import { waitFor } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const MESSAGES = 60;
const SESSIONS = 6;

describe("nats-server crash while messages flow", () => {
  let system: TestSystem;

  before(async () => {
    system = await TestSystem.start({ env: { LURKBOT_ACK_WAIT_MS: "3000" } });
  });
  after(async () => system?.stop());

  it("answers every acknowledged inbound message exactly once", async () => {
    const client = await CliClient.connect(system.nats, "restart");
    const acked = new Set<string>();
    const ids = Array.from({ length: MESSAGES }, () => randomUUID());
    const publishAll = async () => {
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        // a failed publish is retried with the same id: the server deduplicates it
        for (let attempt = 0; attempt < 40 && !acked.has(id); attempt++) {
          try {
            await client.publish(`message ${i}`, { id, sessionName: `s${i % SESSIONS}`, timeoutMs: 1000 });
            acked.add(id);
          } catch {
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      }
    };
    const publishing = publishAll();
    await waitFor(() => acked.size >= MESSAGES / 3, 30_000, "a third of the messages acked");
    await system.nats.kill();
    await new Promise((r) => setTimeout(r, 1000));
    await system.nats.restart();
    await publishing;
    assert.ok(acked.size >= MESSAGES * 0.9, `most messages were acked (${acked.size})`);

    const admin = await system.nats.connect("admin");
    const jsm = await jetstreamManager(admin);
    const repliesByMessage = async () => {
      const counts = new Map<string, number>();
      const info = await jsm.streams.info(STREAMS.outbound);
      for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(STREAMS.outbound, { seq }).catch(() => null);
        if (!m) continue;
        const out = outboundMessageSchema.parse(m.json());
        for (const id of out.replyTo) counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      return counts;
    };
    const counts = await waitFor(async () => {
      const c = await repliesByMessage();
      return [...acked].every((id) => c.has(id)) ? c : null;
    }, 120_000, "a reply for every acked message");
    const duplicated = [...counts].filter(([, n]) => n > 1);
    assert.deepEqual(duplicated, [], "no message was answered twice");
    for (const id of acked) assert.equal(counts.get(id), 1);
    await admin.close();
    await client.close();
  });
});
