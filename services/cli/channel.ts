/**
 * The terminal channel (`send`, `chat`): publishes an InboundMessage to `lurk.in.cli` through
 * JetStream (Nats-Msg-Id = inboundMsgId), after subscribing to the conversation's deliveries
 * (`lurk.out.cli.<conversation>`) and to the run it starts (`lurk.run.evt.<runIdFor(cli, id)>`).
 * The conversation is the encoded session name, so every reply of that session arrives here.
 */
import { randomUUID } from "node:crypto";
import { userInfo } from "node:os";
import { jetstream } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  addUsage, emptyUsage, encodeToken, inboundMessageSchema, inboundMsgId, outboundMessageSchema, runEventSchema, runIdFor, safeParseJson,
  subjects, type Attachment, type InboundMessage, type OutboundMessage, type RunEvent, type Usage,
} from "../../shared/contract/index.js";
import { CliError } from "./errors.js";

export const CLI_CHANNEL = "cli";

export function conversationFor(session: string | undefined): string {
  return encodeToken(session ?? "main");
}

function localUser(): string {
  try {
    return userInfo().username || "operator";
  } catch {
    return process.env.USER || "operator";
  }
}

export interface ReplyResult {
  /** the reply text (chunks joined) */
  reply: string;
  kind: OutboundMessage["kind"] | "none";
  runId: string;
  sessionKey?: string;
  usage?: Usage;
  errorCode?: string;
  /** files the reply carries (media refs: files.ts saves them) */
  attachments: Attachment[];
}

export interface PendingHooks {
  /** a run event of this message's run */
  onRunEvent?: (event: RunEvent) => void;
  /** an approval request or other intermediate delivery for this message */
  onIntermediate?: (msg: OutboundMessage) => void;
}

interface Pending {
  id: string;
  runId: string;
  sub: Subscription;
  chunks: Map<number, OutboundMessage>;
  chunkCount: number | null;
  sessionKey?: string;
  usage?: Usage;
  terminal?: RunEvent["event"];
  graceTimer?: NodeJS.Timeout;
  timer: NodeJS.Timeout;
  hooks: PendingHooks;
  resolve: (r: ReplyResult) => void;
  reject: (e: Error) => void;
}


/**
 * One terminal conversation on the bus. `send()` resolves with the delivery that answers the
 * message; deliveries that answer none of the pending messages go to `onUnsolicited` (a
 * reaction of the message tool as a notice saying so).
 */
export class TerminalChannel {
  private readonly s;
  private readonly pending = new Map<string, Pending>();
  private outSub: Subscription | undefined;
  readonly conversation: string;
  private readonly user = localUser();
  /** after a terminal run event, how long to wait for the delivery before settling on the event */
  graceMs = 5_000;

  constructor(
    private readonly nc: NatsConnection,
    prefix: string,
    private readonly session: string | undefined,
    private readonly onUnsolicited: (msg: OutboundMessage) => void = () => undefined,
    /**
     * the agent to answer (inbound `agentId`: `lurkbot acp --agent`, `lurkbot chat --agent` and
     * its `/agent ID`, which sets it between messages); undefined: the router's bindings
     */
    public agentId?: string,
  ) {
    this.s = subjects(prefix);
    this.conversation = conversationFor(session);
  }

  async open(): Promise<void> {
    this.outSub = this.nc.subscribe(this.s.outbound(CLI_CHANNEL, this.conversation), { callback: (err, msg) => { if (!err) this.onOutbound(msg); } });
    await this.nc.flush();
  }

  get busy(): boolean {
    return this.pending.size > 0;
  }

  /** Publishes one message (with files already in the media store) and waits for its reply. */
  async send(text: string, timeoutMs: number, hooks: PendingHooks = {}, attachments: Attachment[] = []): Promise<ReplyResult> {
    if (!this.outSub) await this.open();
    const id = randomUUID();
    const runId = runIdFor(CLI_CHANNEL, id);
    const message: InboundMessage = inboundMessageSchema.parse({
      type: "lurk.inbound.message.v1",
      id,
      ts: Date.now(),
      channel: CLI_CHANNEL,
      conversation: this.conversation,
      peer: { kind: "dm", id: this.user },
      sender: { id: this.user, name: this.user },
      text,
      attachments,
      mentioned: false,
      ...(this.session !== undefined ? { sessionName: this.session } : {}),
      ...(this.agentId !== undefined ? { agentId: this.agentId } : {}),
    });
    const result = new Promise<ReplyResult>((resolve, reject) => {
      const sub = this.nc.subscribe(this.s.runEvents(runId), { callback: (err, msg) => { if (!err) this.onRunEvent(id, msg); } });
      const timer = setTimeout(() => {
        this.finish(id);
        reject(new CliError(`no reply within ${Math.round(timeoutMs / 1000)} s. Check that the router and agent-runner run (\`npx lurkbot status\`) and read their logs under $LURKBOT_HOME/logs; raise the wait with --timeout SEC.`));
      }, timeoutMs);
      this.pending.set(id, { id, runId, sub, chunks: new Map(), chunkCount: null, timer, hooks, resolve, reject });
    });
    try {
      await this.nc.flush();
      await jetstream(this.nc).publish(this.s.inbound(CLI_CHANNEL), JSON.stringify(message), { msgID: inboundMsgId(CLI_CHANNEL, id), timeout: 5_000 });
    } catch (err) {
      this.finish(id);
      result.catch(() => undefined);
      throw publishError(err);
    }
    return result;
  }

  private finish(id: string): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (p.graceTimer) clearTimeout(p.graceTimer);
    p.sub.unsubscribe();
    return p;
  }

  private onRunEvent(id: string, msg: Msg): void {
    const p = this.pending.get(id);
    if (!p) return;
    let event: RunEvent;
    try {
      event = runEventSchema.parse(safeParseJson(msg.data));
    } catch {
      return;
    }
    p.sessionKey ??= event.sessionKey;
    if (event.event.kind === "usage") p.usage = addUsage(p.usage ?? emptyUsage(), event.event.usage);
    if (event.event.kind === "done" && !p.usage) p.usage = event.event.usage;
    p.hooks.onRunEvent?.(event);
    if (event.event.kind === "done" || event.event.kind === "error") {
      p.terminal = event.event;
      // the delivery normally follows the terminal event; settle on the event if it never comes
      // (a silent run, or a run whose output is not delivered)
      p.graceTimer = setTimeout(() => this.settleFromEvent(id), this.graceMs);
    }
  }

  private settleFromEvent(id: string): void {
    const p = this.finish(id);
    if (!p || !p.terminal) return;
    const t = p.terminal;
    const base = { runId: p.runId, attachments: [], ...(p.sessionKey ? { sessionKey: p.sessionKey } : {}), ...(p.usage ? { usage: p.usage } : {}) };
    if (t.kind === "error") p.resolve({ ...base, reply: t.message, kind: "error", errorCode: t.code });
    else if (t.kind === "done") p.resolve({ ...base, reply: t.silent ? "" : t.text, kind: t.silent ? "none" : "reply" });
  }

  private onOutbound(raw: Msg): void {
    let msg: OutboundMessage;
    try {
      msg = outboundMessageSchema.parse(safeParseJson(raw.data));
    } catch {
      return;
    }
    if (msg.kind === "action") {
      // the message tool's react (the terminal cannot change printed text): shown as a note
      const { action, ...rest } = msg;
      if (action?.op === "react") this.onUnsolicited({ ...rest, kind: "notice", text: `(${action.remove ? "took back the reaction" : "reacted"} ${action.emoji} ${action.remove ? "on" : "to"} message ${action.messageId})` });
      return;
    }
    const id = msg.replyTo.find((r) => this.pending.has(r));
    if (!id) {
      if (msg.kind !== "typing") this.onUnsolicited(msg);
      return;
    }
    const p = this.pending.get(id)!;
    if (msg.kind === "typing") return;
    if (msg.kind === "approval") {
      p.hooks.onIntermediate?.(msg);
      return;
    }
    const index = msg.chunk?.index ?? 0;
    p.chunks.set(index, msg);
    p.chunkCount = msg.chunk?.count ?? 1;
    if (p.chunks.size < p.chunkCount) return;
    this.finish(id);
    const parts = [...p.chunks.entries()].sort((a, b) => a[0] - b[0]).map(([, m]) => m);
    const last = parts[parts.length - 1]!;
    const errorCode = parts.find((m) => m.errorCode)?.errorCode;
    const sessionKey = parts.find((m) => m.sessionKey)?.sessionKey ?? p.sessionKey;
    p.resolve({
      reply: parts.map((m) => m.text).join(""),
      kind: parts.some((m) => m.kind === "error") ? "error" : last.kind,
      runId: msg.runId ?? p.runId,
      attachments: parts.flatMap((m) => m.attachments),
      ...(sessionKey ? { sessionKey } : {}),
      ...(p.usage ? { usage: p.usage } : {}),
      ...(errorCode ? { errorCode } : {}),
    });
  }

  close(): void {
    for (const id of [...this.pending.keys()]) {
      const p = this.finish(id);
      p?.reject(new CliError("the conversation was closed before the reply arrived"));
    }
    this.outSub?.unsubscribe();
  }
}

function publishError(err: unknown): CliError {
  const e = err as { name?: string; message?: string; code?: string };
  const text = `${e?.name ?? ""} ${e?.message ?? ""} ${e?.code ?? ""}`;
  if (/no ?responders|503/i.test(text)) {
    return new CliError("the JetStream stream for inbound messages (LURK_INBOUND) does not exist: LurkBot has not been started on this bus. Start it with `npx lurkbot start`.");
  }
  if (/permission/i.test(text)) {
    return new CliError(`NATS refused the publish (${e?.message}): the server's nats.conf does not match this LurkBot; restart nats-server with \`npx lurkbot start\` after \`npx lurkbot setup\`.`);
  }
  if (/timeout/i.test(text)) {
    return new CliError("JetStream did not acknowledge the message in 5 s: the server may be overloaded or JetStream disabled. Check `npx lurkbot status` and the nats-server log.");
  }
  return new CliError(`could not publish the message: ${e?.message ?? String(err)}`);
}
