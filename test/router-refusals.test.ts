/**
 * Refusals on a real bus (router and sessions as processes, messages published as a channel
 * would): a refused message is dropped silently, unless it `awaitsAnswer` (its platform shows the
 * sender a pending state, e.g. Discord's deferred "thinking…"): then it gets exactly one notice
 * replying to it, for every refusal reason except mention gating. Pairing answers with its code
 * either way.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { actorEventSchema, safeParseJson, subjects } from "../shared/contract/index.js";
import { waitFor } from "./harness/actors.js";
import { RouterRig, type Peer } from "./harness/router-rig.js";

const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("refused messages that await an answer (router, sessions as processes)", () => {
  const rig = new RouterRig();
  const { outbound, send, noRun } = rig;
  const refusals: Array<{ reason: string; channel: string }> = [];

  before(async () => {
    await rig.start({
      routing: {
        dm: { policy: "open", byChannel: { discord: { policy: "disabled" }, slack: { policy: "allowlist", allowFrom: ["slack:friend"] }, telegram: { policy: "pairing" } } },
        pairing: { maxPending: 1 },
        groups: { byChannel: { telegram: { policy: "disabled" }, slack: { policy: "allowlist", allowFrom: ["slack:ok-room"] }, web: { requireMention: true } } },
      },
    }, ["sessions", "router"]);
    rig.admin.subscribe(s.eventsOf("router"), {
      callback: (_e, m) => {
        const ev = actorEventSchema.parse(safeParseJson(m.data));
        if (ev.event === "refused") refusals.push(ev.data as { reason: string; channel: string });
      },
    });
    await rig.admin.flush();
  });
  after(() => rig.stop());

  const refusedCount = (reason: string, channel: string) => refusals.filter((r) => r.reason === reason && r.channel === channel).length;
  const answersTo = (id: string) => outbound.filter((o) => o.replyTo.includes(id));

  /** Sends one message without the flag, then one with it, from the same sender to the same place. */
  async function refusedPair(channel: string, peer: Peer, sender: string, reason: string) {
    const before = refusedCount(reason, channel);
    const silent = await send(channel, peer, "hello", { sender });
    await waitFor(() => refusedCount(reason, channel) > before, 10_000, `refused ${reason} (no flag)`);
    const awaiting = await send(channel, peer, "hello", { sender, awaitsAnswer: true });
    await waitFor(() => refusedCount(reason, channel) > before + 1, 10_000, `refused ${reason} (awaitsAnswer)`);
    return { silent, awaiting };
  }

  const cases: Array<[string, string, Peer, string, string]> = [
    ["dm-disabled", "discord", { kind: "dm", id: "someone" }, "someone", "I don't take direct messages."],
    ["dm-not-allowed", "slack", { kind: "dm", id: "stranger" }, "stranger", "You are not on this bot's allowlist here, so I can't answer you."],
    ["group-disabled", "telegram", { kind: "group", id: "-100777" }, "member", "I don't answer in groups or channels."],
    ["group-not-allowed", "slack", { kind: "group", id: "other-room" }, "member", "I don't answer in this group."],
  ];
  for (const [reason, channel, peer, sender, text] of cases) {
    it(`${reason}: one notice replying to the message that awaits an answer, none without the flag, no run`, async () => {
      const { silent, awaiting } = await refusedPair(channel, peer, sender, reason);
      await waitFor(() => answersTo(awaiting.id).length > 0, 10_000, "the refusal notice");
      await Promise.all([noRun(silent.runId), noRun(awaiting.runId)]);
      const [notice, ...more] = answersTo(awaiting.id);
      assert.equal(more.length, 0, "exactly one notice");
      assert.deepEqual({ kind: notice!.kind, text: notice!.text, replyTo: notice!.replyTo, channel: notice!.channel, conversation: notice!.conversation }, { kind: "notice", text, replyTo: [awaiting.id], channel, conversation: `c-${peer.id}` });
      assert.deepEqual(answersTo(silent.id), [], "without awaitsAnswer the refusal stays silent");
    });
  }

  it("mention gating: a message not addressed to the bot gets no notice even with the flag", async () => {
    const before = refusedCount("not-mentioned", "web");
    const m = await send("web", { kind: "group", id: "gated-room" }, "lunch?", { sender: "member", awaitsAnswer: true });
    await waitFor(() => refusedCount("not-mentioned", "web") > before, 10_000, "refused not-mentioned");
    await noRun(m.runId);
    assert.deepEqual(answersTo(m.id), []);
  });

  it("pairing: the code is the one answer; once pairing is full, only a message awaiting an answer is told so", async () => {
    const first = await send("telegram", { kind: "dm", id: "newcomer" }, "hi", { sender: "newcomer", awaitsAnswer: true });
    const code = await waitFor(() => answersTo(first.id)[0], 10_000, "the pairing code");
    assert.match(code.text, /Your pairing code: [A-Z0-9]{8}/);
    const beforeFull = refusedCount("pairing-full", "telegram");
    const silent = await send("telegram", { kind: "dm", id: "late-1" }, "hi", { sender: "late-1" });
    await waitFor(() => refusedCount("pairing-full", "telegram") > beforeFull, 10_000, "refused pairing-full (no flag)");
    const awaiting = await send("telegram", { kind: "dm", id: "late-2" }, "hi", { sender: "late-2", awaitsAnswer: true });
    await waitFor(() => answersTo(awaiting.id).length > 0, 10_000, "the pairing-full notice");
    await sleep(500);
    assert.equal(answersTo(first.id).length, 1, "the pairing code only");
    assert.deepEqual(answersTo(awaiting.id).map((o) => [o.kind, o.text]), [["notice", "I don't know you yet, and I can't take new pairing requests right now. Try again later."]]);
    assert.deepEqual(answersTo(silent.id), []);
  });
});
