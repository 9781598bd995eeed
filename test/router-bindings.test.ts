/**
 * Routing tables (pure): the most specific binding wins (peer > guild > team > account >
 * channel > default), explicit agents, broadcast groups, and session keys for every DM scope,
 * groups, topics and threads; config contradictions are refused.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseSessionKey, type InboundMessage } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { checkRoutingConfig, resolveAgent } from "../services/router/bindings.js";
import { routeInbound, routesFor } from "../services/router/resolve.js";

const agents = ["main", "work", "family", "discord-bot", "slack-bot", "acct", "tg", "explicit"].map((id, i) => ({ id, default: i === 0 }));
const config = (routing: Record<string, unknown> = {}) => parseConfig({ agents, routing }, { LURKBOT_HOME: "/tmp/lurk-routing-test" });

const bindings = [
  { agentId: "tg", match: { channel: "telegram" } },
  { agentId: "acct", match: { channel: "telegram", accountId: "bot2" } },
  { agentId: "slack-bot", match: { teamId: "T1" } },
  { agentId: "discord-bot", match: { guildId: "G1" } },
  { agentId: "family", match: { channel: "telegram", peer: { kind: "group", id: "-100family" } } },
  { agentId: "work", match: { peer: { kind: "dm", id: "boss" } } },
];

type Msg = Pick<InboundMessage, "channel" | "peer"> & Partial<Pick<InboundMessage, "accountId" | "agentId" | "sessionName">>;
const msg = (m: Msg): InboundMessage => ({
  type: "lurk.inbound.message.v1", id: "m1", ts: 0, conversation: "c", sender: { id: m.peer.kind === "dm" ? m.peer.id : "u1" },
  text: "hi", attachments: [], mentioned: false, ...m,
});

describe("bindings: most specific first", () => {
  const cfg = config({ bindings });
  const table: Array<[string, Msg, string, string]> = [
    ["peer (group) beats channel", { channel: "telegram", peer: { kind: "group", id: "-100family" } }, "family", "peer"],
    ["peer (dm) on any channel", { channel: "discord", peer: { kind: "dm", id: "boss", guildId: "G1" } }, "work", "peer"],
    ["peer matches the parent group of a topic", { channel: "telegram", peer: { kind: "group", id: "-100family", topicId: "7" } }, "family", "peer"],
    ["a dm binding does not match a group with that id", { channel: "slack", peer: { kind: "group", id: "boss", teamId: "T9" } }, "main", "default"],
    ["guild beats account and channel", { channel: "discord", peer: { kind: "channel", id: "c1", guildId: "G1" } }, "discord-bot", "guild"],
    ["team", { channel: "slack", peer: { kind: "channel", id: "C1", teamId: "T1" } }, "slack-bot", "team"],
    ["account beats channel", { channel: "telegram", accountId: "bot2", peer: { kind: "dm", id: "x" } }, "acct", "account"],
    ["channel", { channel: "telegram", accountId: "bot1", peer: { kind: "dm", id: "x" } }, "tg", "channel"],
    ["default agent otherwise", { channel: "web", peer: { kind: "dm", id: "x" } }, "main", "default"],
    ["explicit agent from the channel beats bindings", { channel: "telegram", agentId: "explicit", peer: { kind: "group", id: "-100family" } }, "explicit", "explicit"],
  ];
  for (const [name, m, agentId, tier] of table) {
    it(name, () => {
      const choice = resolveAgent(msg(m), cfg);
      assert.equal(choice.agentId, agentId);
      assert.equal(choice.tier, tier);
    });
  }
  it("within a tier the first binding in config order wins", () => {
    const cfg2 = config({ bindings: [{ agentId: "work", match: { channel: "web" } }, { agentId: "family", match: { channel: "web" } }] });
    assert.equal(resolveAgent(msg({ channel: "web", peer: { kind: "dm", id: "x" } }), cfg2).agentId, "work");
  });
  it("an unknown explicit agent is refused with the configured list", () => {
    assert.throws(() => resolveAgent(msg({ channel: "cli", agentId: "nobody", peer: { kind: "dm", id: "x" } }), cfg), /no agent "nobody".*main, work/);
  });
  it("bindings and broadcasts naming unknown agents stop start-up", () => {
    assert.throws(() => checkRoutingConfig(config({ bindings: [{ agentId: "ghost", match: { channel: "web" } }] })), /bindings\[0\]\.agentId "ghost"/);
    assert.throws(() => checkRoutingConfig(config({ broadcast: { peers: { g1: ["main", "ghost"] } } })), /broadcast\.peers\["g1"\] names "ghost"/);
    assert.throws(() => config({ bindings: [{ agentId: "main", match: {} }] }), /at least one of channel/);
    checkRoutingConfig(config({ bindings }));
  });
});

describe("session keys", () => {
  const dm = { channel: "telegram", peer: { kind: "dm" as const, id: "42" } };
  const LINKS = { alice: ["telegram:42", "discord:987"] };
  const table: Array<[string, Record<string, unknown>, Msg, string, string]> = [
    ["dmScope main: the shared main session", {}, dm, "agent:main:main", "main"],
    ["dmScope per-peer", { dmScope: "per-peer" }, dm, "agent:main:dm:42", "dm"],
    ["dmScope per-channel-peer", { dmScope: "per-channel-peer" }, dm, "agent:main:telegram:dm:42", "dm"],
    ["a named session (cli --session) wins over the scope", { dmScope: "per-peer" }, { channel: "cli", sessionName: "work", peer: { kind: "dm", id: "me" } }, "agent:main:cli:dm:work", "dm"],
    ["group", {}, { channel: "telegram", peer: { kind: "group", id: "-100123" } }, "agent:main:telegram:group:-100123", "group"],
    ["forum topic", {}, { channel: "telegram", peer: { kind: "group", id: "-100123", topicId: "42" } }, "agent:main:telegram:group:-100123:topic:42", "topic"],
    ["thread", {}, { channel: "slack", peer: { kind: "channel", id: "C123", threadId: "1234567890.0001" } }, "agent:main:slack:channel:C123:thread:1234567890~2E0001", "thread"],
    ["ids with ':' are encoded", { dmScope: "per-peer" }, { channel: "web", peer: { kind: "dm", id: "a:b c" } }, "agent:main:dm:a:b~20c", "dm"],
    ["identity links: a linked sender's DMs use the canonical name (telegram)", { dmScope: "per-peer", identityLinks: LINKS }, dm, "agent:main:dm:alice", "dm"],
    ["identity links: the same person on discord shares the session", { dmScope: "per-peer", identityLinks: LINKS }, { channel: "discord", peer: { kind: "dm", id: "987" } }, "agent:main:dm:alice", "dm"],
    ["identity links: an unlinked sender keeps their id", { dmScope: "per-peer", identityLinks: LINKS }, { channel: "discord", peer: { kind: "dm", id: "42" } }, "agent:main:dm:42", "dm"],
    ["identity links do not merge per-channel-peer sessions", { dmScope: "per-channel-peer", identityLinks: LINKS }, dm, "agent:main:telegram:dm:42", "dm"],
  ];
  for (const [name, routing, m, key, type] of table) {
    it(name, () => {
      const route = routeInbound(msg(m), config(routing));
      assert.equal(route.sessionKey, key);
      assert.equal(route.sessionType, type);
      assert.deepEqual(parseSessionKey(route.sessionKey), { agentId: "main", type });
    });
  }
  it("refuses a sender linked to two identities, naming the entry", () => {
    assert.throws(() => config({ identityLinks: { alice: ["telegram:42"], bob: ["discord:1", "telegram:42"] } }),
      /routing\.identityLinks\.bob\.1: "telegram:42" is linked to "alice" already/);
    assert.throws(() => config({ identityLinks: { "al ice": ["telegram:42"] } }), /identityLinks.*1-64 letters, digits/);
  });

  it("the bound agent names the session", () => {
    const route = routeInbound(msg({ channel: "telegram", peer: { kind: "group", id: "-100family" } }), config({ bindings }));
    assert.equal(route.sessionKey, "agent:family:telegram:group:-100family");
  });
});

describe("broadcast groups", () => {
  const cfg = config({ broadcast: { strategy: "sequential", peers: { "telegram:-100team": ["work", "family"], "-100any": ["main", "tg", "main"] } } });
  it("a broadcast peer goes to every listed agent, each in its own session", () => {
    const routes = routesFor(msg({ channel: "telegram", peer: { kind: "group", id: "-100team" } }), cfg);
    assert.deepEqual(routes.map((r) => r.sessionKey), ["agent:work:telegram:group:-100team", "agent:family:telegram:group:-100team"]);
    assert.ok(routes.every((r) => r.tier === "broadcast"));
  });
  it("channel-qualified keys only match their channel; plain ids match any; duplicates collapse", () => {
    assert.equal(routesFor(msg({ channel: "discord", peer: { kind: "group", id: "-100team" } }), cfg).length, 1);
    assert.deepEqual(routesFor(msg({ channel: "web", peer: { kind: "group", id: "-100any" } }), cfg).map((r) => r.agentId), ["main", "tg"]);
  });
  it("an explicit agent is not broadcast", () => {
    assert.deepEqual(routesFor(msg({ channel: "telegram", agentId: "work", peer: { kind: "group", id: "-100team" } }), cfg).map((r) => r.agentId), ["work"]);
  });
});
