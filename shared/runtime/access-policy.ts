/**
 * Who may talk to the bot (pure decisions; the pairing store answers "is this sender paired").
 * DMs: policy "open" (anyone), "allowlist" (allowFrom and paired senders), "pairing" (as
 * allowlist, and an unknown sender is given a pairing code), "disabled" (nobody). Groups:
 * "open", "allowlist" (groups.allowFrom), "disabled"; with requireMention a group message
 * passes only when the bot was mentioned. The terminal channel `cli` is the owner and always
 * passes; owners (routing.commands.owners) pass group gating too.
 * The API channels (openai-http: bearer token; webhook: HMAC-signed requests) authenticate every
 * request themselves: their callers are trusted peers and DM/group policies (pairing included)
 * do not apply to them. A pairing code would reach an API client as a completion, and a silent
 * refusal as a timeout; to shut such a channel, disable it (`channels.<name>.enabled: false`).
 */
import type { InboundMessage, Peer } from "../contract/index.js";
import type { LurkConfig } from "./config.js";

export const OWNER_CHANNEL = "cli";
/** channels whose every request is authenticated by the channel (token or signature) */
export const AUTHENTICATED_API_CHANNELS: ReadonlySet<string> = new Set(["openai-http", "webhook"]);

export type AccessDecision =
  | { allow: true }
  | { allow: false; reason: "dm-disabled" | "dm-not-allowed" | "group-disabled" | "group-not-allowed" | "not-mentioned" }
  | { allow: false; reason: "pairing-required" };
export type RefusalReason = Extract<AccessDecision, { allow: false }>["reason"];

type Who = Pick<InboundMessage, "channel" | "sender" | "peer" | "mentioned">;

/** "*", "<channel>:<id>" or "<id>" entries. */
export function listMatches(list: readonly string[], channel: string, id: string): boolean {
  return list.some((entry) => entry === "*" || entry === id || entry === `${channel}:${id}`);
}

export function isOwner(msg: Pick<InboundMessage, "channel" | "sender">, config: LurkConfig): boolean {
  return msg.channel === OWNER_CHANNEL || listMatches(config.routing.commands.owners, msg.channel, msg.sender.id);
}

export function dmRules(channel: string, config: LurkConfig) {
  const dm = config.routing.dm;
  const own = dm.byChannel[channel];
  return { policy: own?.policy ?? dm.policy, allowFrom: own?.allowFrom ?? dm.allowFrom };
}

export function groupRules(channel: string, config: LurkConfig) {
  const groups = config.routing.groups;
  const own = groups.byChannel[channel];
  return { policy: own?.policy ?? groups.policy, allowFrom: own?.allowFrom ?? groups.allowFrom, requireMention: own?.requireMention ?? groups.requireMention };
}

/**
 * The decision for one message. `paired` tells whether the sender was approved through pairing;
 * `isCommand` lets owners' commands through mention gating.
 */
export function decideAccess(msg: Who, config: LurkConfig, paired: (channel: string, senderId: string) => boolean, isCommand = false): AccessDecision {
  if (msg.channel === OWNER_CHANNEL || AUTHENTICATED_API_CHANNELS.has(msg.channel)) return { allow: true };
  const owner = listMatches(config.routing.commands.owners, msg.channel, msg.sender.id);
  if (msg.peer.kind === "dm") {
    const { policy, allowFrom } = dmRules(msg.channel, config);
    if (policy === "disabled") return { allow: false, reason: "dm-disabled" };
    if (policy === "open" || owner) return { allow: true };
    if (listMatches(allowFrom, msg.channel, msg.sender.id) || paired(msg.channel, msg.sender.id)) return { allow: true };
    return policy === "pairing" ? { allow: false, reason: "pairing-required" } : { allow: false, reason: "dm-not-allowed" };
  }
  const { policy, allowFrom, requireMention } = groupRules(msg.channel, config);
  if (policy === "disabled") return { allow: false, reason: "group-disabled" };
  if (policy === "allowlist" && !listMatches(allowFrom, msg.channel, msg.peer.id)) return { allow: false, reason: "group-not-allowed" };
  if (requireMention && !msg.mentioned && !(owner && isCommand)) return { allow: false, reason: "not-mentioned" };
  return { allow: true };
}

const PLACE: Record<Peer["kind"], string> = { dm: "chat", group: "group", channel: "channel", thread: "thread", topic: "topic" };

/**
 * What a sender whose platform waits for an answer (`awaitsAnswer`) is told when refused: that
 * the bot does not answer there and the plain reason, nothing of the configuration beyond it.
 * Undefined for pairing (its own notice carries the code) and for a message not addressed to
 * the bot (a group's ordinary traffic, kept as context).
 */
export function refusalText(reason: RefusalReason, place: Peer["kind"]): string | undefined {
  switch (reason) {
    case "dm-disabled": return "I don't take direct messages.";
    case "dm-not-allowed": return "You are not on this bot's allowlist here, so I can't answer you.";
    case "group-disabled": return "I don't answer in groups or channels.";
    case "group-not-allowed": return `I don't answer in this ${PLACE[place]}.`;
    case "pairing-required":
    case "not-mentioned": return undefined;
  }
}
