/**
 * One inbound message, start to ack: access (DM/group policy, pairing), commands and directives,
 * routing (bindings, broadcast), inbound debounce, then the session's queue. The part that
 * reads or changes a session's state runs one message at a time per session (in arrival order),
 * so `/model x` is applied before the next message of that session is routed; waiting for the
 * session's lane happens outside that section. Resolves when the message may be acked.
 */
import { envelope, LurkError, runIdFor, type InboundMessage, type RunRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { decideAccess, refusalText, type RefusalReason } from "../../shared/runtime/access-policy.js";
import { broadcastRunId, submitBroadcast } from "./broadcast.js";
import { executeCommand, type CommandContext } from "./command-exec.js";
import { emitCommandEvent } from "./command-event.js";
import { parseText, type Directives } from "./commands.js";
import { Debouncer } from "./debounce.js";
import { GroupContext, withContext } from "./group-context.js";
import { HandledMessages } from "./handled-messages.js";
import { noticeId, publishNotice } from "./notices.js";
import type { PairingStore } from "./pairing.js";
import { notifyOwners } from "./pairing-owners.js";
import { merged, Work, type DeliveryLike, type SessionQueues, type WorkOutcome } from "./queue.js";
import type { RouterReplica, RouterState } from "./replica.js";
import { routesFor, type Route } from "./resolve.js";
import { queueSettingsFor, runOptionsFor, type SettingsCache } from "./settings.js";
import { KeyedSerial } from "../../shared/runtime/keyed-serial.js";
import { handleReaction } from "./reactions.js";
import { channelCapabilities } from "../../shared/runtime/channel-capabilities.js";
import type { PendingEvents } from "./pending-events.js";

export interface IntakeDeps {
  rt: ActorRuntime;
  queues: SessionQueues;
  settings: SettingsCache;
  pairing: PairingStore;
  commands: Omit<CommandContext, "cancelDebounced" | "submitCompact">;
  /** resolves when the run no longer holds its lane */
  ended(runId: string): Promise<void>;
  /** group context and handled messages are replicated there */
  replica: Pick<RouterReplica, "groupContextChanged" | "handled" | "handledForgotten">;
  /** what the previous active router left in the replica */
  restored: Pick<RouterState, "groups" | "handled">;
  /** pending system events of a session, recorded never during a run (reactions share it with injects) */
  events: PendingEvents;
}

export class Intake {
  private readonly serial = new KeyedSerial();
  private readonly debouncer = new Debouncer<Work, WorkOutcome>();
  /** messages handled without a run of their own (merged, handed, dropped, commands): a redelivery is acked at once */
  private readonly handled: HandledMessages;
  /** works that own a run after an inbound debounce flush */
  private readonly leaders = new WeakSet<Work>();
  /** group messages not addressed to the bot, for the next one that is (group-context.ts) */
  private readonly groupContext: GroupContext;
  private readonly commandContext: CommandContext;

  constructor(private readonly deps: IntakeDeps) {
    const { replica, restored } = deps;
    this.groupContext = new GroupContext(deps.rt.config.routing.groups.historyLimit, { onChange: (sessionKey, lines) => replica.groupContextChanged(sessionKey, lines) });
    for (const group of restored.groups) this.groupContext.restore(group.sessionKey, group.lines);
    this.handled = new HandledMessages({ onRemember: (key, at) => replica.handled(key, at), onForget: (key) => replica.handledForgotten(key) });
    for (const entry of [...restored.handled].sort((a, b) => a.at - b.at)) this.handled.restore(entry.key, entry.at); // oldest first: the count bound drops those first
    this.commandContext = {
      ...deps.commands,
      cancelDebounced: (sessionKey) => this.debouncer.cancel(`${sessionKey}\u0000`, "dropped").length,
      submitCompact: (route, instructions) => this.deps.queues.submit(new Work(this.compactRequest(route, instructions), { redelivered: false, deliveryCount: 1 }, { ...this.deps.rt.config.routing.queue, mode: "queue" }, Date.now())),
    };
  }

  async handle(msg: InboundMessage, delivery: DeliveryLike & { streamSeq?: number }): Promise<void> {
    // a user's reaction: never a run, never an answer; a pending system event (reactions.ts)
    if (msg.reaction) {
      const { rt, pairing, events } = this.deps;
      return handleReaction({ rt, pairing, events }, { ...msg, reaction: msg.reaction }, delivery.streamSeq ?? 0);
    }
    const key = `${msg.channel}:${msg.id}`;
    if (delivery.redelivered && this.handled.has(key)) return;
    const { rt } = this.deps;
    const parsed = parseText(msg.text);
    const access = decideAccess(msg, rt.config, (c, s) => this.deps.pairing.isApproved(c, s), parsed.kind !== "message");
    if (!access.allow) {
      // replicated without waiting (group-context.ts): context is not worth delaying the ack;
      // a crash in the moment between the ack and the write loses that line, not a message
      if (access.reason === "not-mentioned") for (const route of routesFor(msg, rt.config)) this.groupContext.add(route.sessionKey, msg);
      await this.refuse(msg, access.reason);
      return;
    }
    const routes = await this.routesOrAnswer(msg);
    if (!routes) return;
    const primary = routes[0]!;
    const boxed = await this.serial.run(primary.sessionKey, async () => {
      if (parsed.kind === "error") {
        await publishNotice(rt, msg, parsed.message, { kind: "error", deliveryId: noticeId(msg), sessionKey: primary.sessionKey });
        return { ticket: Promise.resolve<WorkOutcome[]>(["handed"]) };
      }
      if (parsed.kind === "command") {
        const result = await executeCommand(this.commandContext, parsed.command, msg, primary);
        await publishNotice(rt, msg, result.text, { kind: result.kind ?? "notice", deliveryId: noticeId(msg), sessionKey: primary.sessionKey });
        emitCommandEvent(rt, parsed.command, msg, primary, result);
        if (result.continueWith === undefined) return { ticket: (result.ticket ?? Promise.resolve()).then((): WorkOutcome[] => ["handed"]) };
        return this.queueMessage(msg, delivery, routes, result.continueWith, {});
      }
      return this.queueMessage(msg, delivery, routes, parsed.text, parsed.directives);
    });
    const outcomes = await boxed.ticket;
    // a message the queue dropped (full, /stop, an interrupt) gets no run: a pending platform state must still be answered
    if (msg.awaitsAnswer && outcomes.length > 0 && outcomes.every((o) => o === "dropped")) {
      await publishNotice(rt, msg, "I dropped this message without answering it: the conversation's queue was full, or it was stopped or interrupted while I was busy. Send it again if it still matters.", { deliveryId: noticeId(msg, "dropped") });
    }
    // awaited: the entry must be in the replica before the ack, which may be lost (a message with
    // a run of its own needs none: RUNS deduplicates by its run id). It delays only the ack:
    // the run or answer that handled the message has already left
    if (outcomes.every((o) => o !== "dispatched")) await this.handled.remember(key);
  }

  /**
   * The message's routes; undefined when it names an agent (inbound `agentId`: `lurkbot chat
   * --agent`, `/agent`, acp) that is not configured: that is answered with an error (NOT_FOUND,
   * naming the agents) rather than dead-lettered unanswered.
   */
  private async routesOrAnswer(msg: InboundMessage): Promise<Route[] | undefined> {
    const { rt } = this.deps;
    try {
      return routesFor(msg, rt.config);
    } catch (err) {
      const error = LurkError.from(err);
      if (!msg.agentId || error.code !== "NOT_FOUND") throw err;
      await publishNotice(rt, msg, `${error.message}.`, { kind: "error", deliveryId: noticeId(msg), errorCode: error.code });
      rt.emit("unknown_agent", { channel: msg.channel, agentId: msg.agentId }, "info");
      return undefined;
    }
  }

  /** A system inject (`inject:<id>`) handed to the active run: a redelivery is acked at once, as for messages. */
  injectHandled(key: string): boolean {
    return this.handled.has(key);
  }

  /** Resolves once the entry is replicated: ack after it. */
  rememberInject(key: string): Promise<void> {
    return this.handled.remember(key);
  }

  /** Forgets aged-out group context and handled messages (here and in the replica). */
  prune(): void {
    this.groupContext.prune();
    this.handled.prune();
  }

  /**
   * Builds each route's work and queues it (debounced when configured). The ticket (settled when
   * the message may be acked) is boxed: an async function would otherwise wait for it.
   */
  private async queueMessage(msg: InboundMessage, delivery: DeliveryLike, routes: Route[], text: string, directives: Directives): Promise<{ ticket: Promise<WorkOutcome[]> }> {
    const { rt, queues, settings } = this.deps;
    const routing = rt.config.routing;
    const works: Work[] = [];
    for (const route of routes) {
      const session = await settings.get(route.sessionKey);
      const runId = routes.length > 1 ? broadcastRunId(msg.channel, msg.id, route.agentId) : runIdFor(msg.channel, msg.id);
      const context = msg.peer.kind === "group" ? this.groupContext.take(route.sessionKey) : [];
      const request = messageRequest(msg, route, runId, withContext(text, context), runOptionsFor(session, directives));
      works.push(new Work(request, delivery, queueSettingsFor(routing, session, directives.queue, msg.channel), Date.now()));
    }
    if (works.length > 1) return { ticket: submitBroadcast(works, routing.broadcast.strategy, (w) => queues.submit(w), this.deps.ended) };
    const work = works[0]!;
    if (routing.debounceMs <= 0) return { ticket: queues.submit(work).then((o) => [o]) };
    const flushed = this.debouncer.add(`${work.sessionKey}\u0000${msg.sender.id}`, work, routing.debounceMs, async (batch) => {
      const lead = batch[0]!;
      const rest: Work[] = [];
      this.leaders.add(lead);
      for (const other of batch.slice(1)) {
        if (lead.canAbsorb(other)) lead.absorb(other, Date.now());
        else {
          rest.push(other);
          this.leaders.add(other);
        }
      }
      const outcomes = await Promise.all([queues.submit(lead), ...rest.map((w) => queues.submit(w))]);
      return outcomes[0]!;
    });
    // the batch's first message owns the run; the others were merged into it
    return { ticket: flushed.then((o) => [this.leaders.has(work) ? o : merged(o)]) };
  }

  private compactRequest(route: Route, instructions: string): RunRequest {
    const id = `compact-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    return envelope("lurk.run.request.v1", {
      runId: runIdFor("router", id), sessionKey: route.sessionKey, agentId: route.agentId, sessionType: route.sessionType,
      trigger: "system" as const, causationId: id,
      inputs: [{ kind: "system_event" as const, text: instructions ? `compact: ${instructions}` : "compact", attachments: [] }],
      deliver: false, options: { command: "compact" as const },
    });
  }

  /**
   * A refused message is dropped silently, unless its platform shows the sender a pending state
   * until an answer comes (`awaitsAnswer`): then it is answered with a short notice. Pairing
   * answers with the code either way.
   */
  private async refuse(msg: InboundMessage, reason: RefusalReason): Promise<void> {
    const { rt, pairing } = this.deps;
    const answerPending = async (text: string | undefined) => {
      if (msg.awaitsAnswer && text) await publishNotice(rt, msg, text, { deliveryId: noticeId(msg, "refusal") });
    };
    if (reason !== "pairing-required") {
      rt.emit("refused", { channel: msg.channel, reason, peerKind: msg.peer.kind }, "debug");
      await answerPending(refusalText(reason, msg.peer.kind));
      return;
    }
    const outcome = await pairing.request(msg.channel, msg.sender, msg.conversation);
    if (outcome.kind === "full") {
      rt.emit("refused", { channel: msg.channel, reason: "pairing-full" }, "info");
      await answerPending("I don't know you yet, and I can't take new pairing requests right now. Try again later.");
      return;
    }
    if (outcome.kind === "approved") {
      // approved a moment ago: the sender writes again
      await answerPending("You were approved a moment ago: please send that again.");
      return;
    }
    if (outcome.created) {
      rt.emit("pairing_requested", { channel: msg.channel, code: outcome.code }, "info");
      await notifyOwners(rt, { channel: msg.channel, senderId: msg.sender.id, ...(msg.sender.name ? { senderName: msg.sender.name } : {}), code: outcome.code, expiresAt: outcome.expiresAt });
    }
    const minutes = Math.max(1, Math.round((outcome.expiresAt - Date.now()) / 60_000));
    await publishNotice(rt, msg, [
      "I don't know you yet, so I can't answer here.",
      `Your pairing code: ${outcome.code} (valid for ${minutes} min).`,
      `Ask the owner to approve it: npx lurkbot pairing approve ${outcome.code}`,
    ].join("\n"), { deliveryId: noticeId(msg, "pairing") });
  }
}

function messageRequest(msg: InboundMessage, route: Route, runId: string, text: string, options: RunRequest["options"]): RunRequest {
  return envelope("lurk.run.request.v1", {
    runId,
    sessionKey: route.sessionKey,
    agentId: route.agentId,
    sessionType: route.sessionType,
    trigger: "message" as const,
    causationId: msg.id,
    // the platform id is shown to the model where the message tool can react to it
    inputs: [{ kind: "user" as const, text, attachments: msg.attachments, sourceId: msg.id, ...(channelCapabilities(msg.channel).includes("reactions") ? { messageId: msg.id } : {}) }],
    origin: {
      channel: msg.channel,
      conversation: msg.conversation,
      peer: msg.peer,
      sender: msg.sender,
      messageIds: [msg.id],
      ...(msg.accountId ? { accountId: msg.accountId } : {}),
    },
    deliver: true,
    options,
  });
}
