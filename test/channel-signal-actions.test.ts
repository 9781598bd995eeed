/**
 * The Signal channel's message actions (the `message` tool's react, edit, delete) end to end: the
 * whole system and the local signal-cli daemon (test/fakes/signal-cli-server.ts) speaking
 * sendReaction, send with editTimestamp and remoteDelete as signal-cli 0.13's JSON-RPC does.
 * Actions are published as outbound messages of kind "action" (as the tool does) and answered
 * by the kit's receipts.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, subjects, type MessageAction } from "../shared/contract/index.js";
import { conversationOf, quoteOf } from "../services/channel-signal/inbound.js";
import { FakeSignalCli } from "./fakes/signal-cli-server.js";
import { waitFor } from "./harness/actors.js";
import { TestSystem } from "./harness/system.js";

const S = subjects();
const GROUP = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=";

describe("signal message actions end to end", () => {
  let system: TestSystem;
  let signal: FakeSignalCli;
  let admin: NatsConnection;
  const receipts: { deliveryId: string; status: string; error?: string; platformMessageId?: string }[] = [];
  const routing = { dm: { policy: "open" }, groups: { requireMention: true } };

  before(async () => {
    signal = await FakeSignalCli.start();
    system = await TestSystem.start({ config: { routing } });
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { signal: { enabled: true, url: signal.url, account: signal.account } }, routing }));
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-signal"), {
      callback: (_e, m) => {
        const { data } = m.json<{ data: { deliveryId?: string; status?: string; error?: string; platformMessageId?: string } }>();
        if (data.deliveryId) receipts.push({ deliveryId: data.deliveryId, status: data.status ?? "", ...(data.error ? { error: data.error } : {}), ...(data.platformMessageId ? { platformMessageId: data.platformMessageId } : {}) });
      },
    });
    await admin.flush();
    await system.startActor("channel-signal");
    await waitFor(() => signal.openStreams > 0 || undefined, 10_000, "the event stream");
  });
  after(async () => {
    await admin?.close();
    await system?.actors.get("channel-signal")?.stop();
    await system?.stop();
    await signal?.close();
  });

  const publish = async (conversation: string, fields: Record<string, unknown>) => {
    const out = envelope("lurk.outbound.message.v1", { channel: "signal", conversation, replyTo: [], attachments: [], text: "", kind: "reply" as const, ...fields });
    await jetstream(admin).publish(S.outbound("signal", conversation), JSON.stringify(out));
    return out;
  };
  const act = (conversation: string, action: MessageAction) => publish(conversation, { kind: "action", action });
  const receiptOf = (id: string, status: string) => waitFor(() => receipts.find((r) => r.deliveryId === id && r.status === status), 30_000, `${status} for ${id}`);
  const callsOf = (method: string) => signal.calls.filter((c) => c.method === method);
  const dm = () => conversationOf({ kind: "dm", recipient: signal.alice.uuid });
  const group = () => conversationOf({ kind: "group", groupId: GROUP });

  it("react: sendReaction with the message's author and timestamp (DM and group), once across an I/O error and a redelivery; remove takes it back; another chat's message is refused", async () => {
    const ts = signal.nextTimestamp();
    const users = `${signal.alice.uuid}:${ts}`;
    signal.failNext("sendReaction", { code: -3, message: "Failed to send message: Connection reset (IOException)" });
    const react = await act(dm(), { op: "react", messageId: users, emoji: "👍" });
    await receiptOf(react.id, "delivered");
    const calls = callsOf("sendReaction");
    assert.equal(calls.length, 2, "one failed attempt, one accepted");
    assert.deepEqual(calls[1]!.params, { account: signal.account, recipient: [signal.alice.uuid], emoji: "👍", targetAuthor: signal.alice.uuid, targetTimestamp: ts });
    assert.deepEqual([...signal.reactions], [[users, "👍"]], "one reaction");

    await jetstream(admin).publish(S.outbound("signal", dm()), JSON.stringify(react));
    await receiptOf(react.id, "duplicate");
    assert.equal(callsOf("sendReaction").length, 2, "a redelivered action is not sent again");

    const remove = await act(dm(), { op: "react", messageId: users, emoji: "👍", remove: true });
    await receiptOf(remove.id, "delivered");
    assert.equal(callsOf("sendReaction").at(-1)!.params.remove, true);
    assert.equal(signal.reactions.size, 0, "taken back");

    const groupTs = signal.nextTimestamp();
    const inGroup = await act(group(), { op: "react", messageId: `${signal.alice.number}:${groupTs}`, emoji: "🎉" });
    await receiptOf(inGroup.id, "delivered");
    const groupCall = callsOf("sendReaction").at(-1)!;
    assert.deepEqual([groupCall.params.groupId, groupCall.params.recipient, groupCall.params.targetAuthor, groupCall.params.targetTimestamp], [GROUP, undefined, signal.alice.number, groupTs]);

    const before = callsOf("sendReaction").length;
    const stranger = await act(dm(), { op: "react", messageId: `+15559999999:${signal.nextTimestamp()}`, emoji: "👍" });
    assert.match((await receiptOf(stranger.id, "failed")).error ?? "", /not in this conversation/);
    const malformed = await act(dm(), { op: "react", messageId: "not-a-signal-id", emoji: "👍" });
    assert.match((await receiptOf(malformed.id, "failed")).error ?? "", /not a Signal message id/);
    assert.equal(callsOf("sendReaction").length, before, "neither reached signal-cli");
  });

  it("edit: send with editTimestamp of the assistant's message, once across an I/O error; delete: remoteDelete of every part; a user's message is refused", async () => {
    const reply = await publish(dm(), { text: "the **first** take" });
    const sent = await receiptOf(reply.id, "delivered");
    const original = quoteOf(sent.platformMessageId)!;
    assert.equal(original.author, signal.account, "the ledger holds the bot's number and the send's timestamp");
    signal.failNext("send", { code: -3, message: "Failed to send message: Connection reset (IOException)" });
    const edit = await act(dm(), { op: "edit", messageId: reply.id, text: "the *second* take" });
    await receiptOf(edit.id, "delivered");
    const edits = signal.sends().filter((c) => c.params.editTimestamp !== undefined);
    assert.equal(edits.length, 2, "one failed attempt, one accepted");
    assert.deepEqual(edits[1]!.params, { account: signal.account, recipient: [signal.alice.uuid], message: "the second take", editTimestamp: original.timestamp });
    assert.deepEqual(signal.botMessages.get(original.timestamp), { to: signal.alice.uuid, text: "the second take", edits: ["the second take"], deleted: false });

    const inGroup = await publish(group(), { text: "group note" });
    const groupSent = quoteOf((await receiptOf(inGroup.id, "delivered")).platformMessageId)!;
    const groupEdit = await act(group(), { op: "edit", messageId: `${signal.account}:${groupSent.timestamp}`, text: "group note, fixed" });
    await receiptOf(groupEdit.id, "delivered");
    assert.deepEqual([signal.sends().at(-1)!.params.groupId, signal.sends().at(-1)!.params.editTimestamp], [GROUP, groupSent.timestamp]);
    assert.equal(signal.botMessages.get(groupSent.timestamp)!.text, "group note, fixed");

    const users = `${signal.alice.uuid}:${signal.nextTimestamp()}`;
    const notMine = await act(dm(), { op: "edit", messageId: users, text: "hijacked" });
    assert.match((await receiptOf(notMine.id, "failed")).error ?? "", /not a message the assistant sent in this conversation/);
    const otherChat = await act(group(), { op: "delete", messageId: reply.id });
    assert.match((await receiptOf(otherChat.id, "failed")).error ?? "", /not a message the assistant sent in this conversation/, "the DM's message, named from the group");

    const long = await publish(dm(), { text: `${"a".repeat(1_500)}\n\n${"b".repeat(1_500)}` });
    await receiptOf(long.id, "delivered");
    const parts = [...signal.botMessages].filter(([, m]) => /^(a+|b+)$/.test(m.text)).map(([ts]) => ts);
    assert.equal(parts.length, 2, "sent as two messages");
    const del = await act(dm(), { op: "delete", messageId: long.id });
    await receiptOf(del.id, "delivered");
    assert.deepEqual(callsOf("remoteDelete").map((c) => [c.params.recipient, c.params.targetTimestamp]), parts.map((ts) => [[signal.alice.uuid], ts]));
    assert.ok(parts.every((ts) => signal.botMessages.get(ts)!.deleted), "both parts deleted");
    assert.equal(signal.botMessages.get(original.timestamp)!.deleted, false, "the other message untouched");
  });
});
