/**
 * One ACP session: a LurkBot session of its own, reached through the terminal channel (`cli`)
 * with the ACP session id as its session name (session key `agent:<agent>:cli:dm:<id>`, its
 * own conversation `lurk.out.cli.<id>`). A prompt is one inbound message; its run's events
 * become session/update notifications (events-map.ts) and the prompt is answered when the run
 * ends: done -> end_turn (max_tokens when the model was cut off), aborted -> cancelled, any other
 * error -> a JSON-RPC error carrying the LurkBot error code. A message the router answers
 * without a run (a command such as /status) is answered with its notice as the message.
 * session/cancel sends `/stop` in the session (the router aborts the run and drops queued
 * messages); the prompt ends with `cancelled` when the run's abort is seen, or shortly after the
 * router took the /stop when no run was under way. One prompt at a time per session. The
 * process holds the owner's rights (the cli user), so a prompt that is `/approve ID` or
 * `/deny ID` is sent only for an approval this session asked the editor about; any other is
 * answered here, not sent. A prompt's images and files (prompt-files.ts, decoded by the caller)
 * are stored in the media store and sent as the message's attachments. Files the agent sends to
 * the session (the `message` tool, a reply's attachments) are saved under the downloads folder
 * and shown as resource_link chunks (received-files.ts); a prompt is answered after those of its
 * run are shown. After the run's `done` the prompt waits (at most DELIVERY_WAIT_MS) for the
 * reply's delivery, which carries the reply's files.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { Attachment, OutboundMessage, RunEvent } from "../../../shared/contract/index.js";
import type { Logger } from "../../../shared/runtime/logger.js";
import type { MediaStore } from "../../../shared/runtime/media.js";
import { TerminalChannel } from "../channel.js";
import { toCliError } from "../errors.js";
import { mapRunEvent, newTurnState, type TurnState } from "./events-map.js";
import { RPC, RpcError } from "./jsonrpc.js";
import { approvalToolCall, decisionOf, permissionRequest, type Approval } from "./permissions.js";
import { storePromptFiles, type PromptFile } from "./prompt-files.js";
import { promptText } from "./prompt-text.js";
import { showReceived } from "./received-files.js";
import type { ContentBlock, SessionUpdate, StopReason } from "./schema.js";

/**
 * A prompt that the router would take as `/approve ID` or `/deny ID` (its grammar: the command
 * first, an optional `@bot`, one word after it), or undefined.
 */
export function approvalCommand(text: string): { command: "approve" | "deny"; approvalId: string } | undefined {
  const trimmed = text.trim();
  const head = /^\/(approve|deny)(?:@\S+)?(?=\s|$)/i.exec(trimmed);
  if (!head) return undefined;
  const words = trimmed.slice(head[0].length).split(/\s+/).filter(Boolean);
  return words.length === 1 ? { command: head[1]!.toLowerCase() as "approve" | "deny", approvalId: words[0]! } : undefined;
}

function refusedDecisionText(d: { command: "approve" | "deny"; approvalId: string }): string {
  return `/${d.command} ${d.approvalId} was not sent: this editor session only decides the approvals it asked you about, and it did not ask about ${d.approvalId}. Answer the editor's permission prompt when one of this session's tool calls needs approval; decide other approvals where they were asked, or with \`npx lurkbot approvals ${d.command} ${d.approvalId}\` in a terminal.`;
}

export interface AcpClientLink {
  notify(method: string, params: unknown): void;
  request(method: string, params: unknown): { result: Promise<unknown> };
}

export interface SessionDeps {
  nc: NatsConnection;
  prefix: string;
  /** `--agent`: the agent every message of this process names */
  agentId?: string;
  client: AcpClientLink;
  log: Logger;
  /** how long a prompt may wait for its run's end */
  promptTimeoutMs: number;
  /** after the router took a /stop, how long to wait for the run's abort before answering cancelled */
  cancelGraceMs: number;
  /** where the prompt's files go and the agent's files come from */
  media: MediaStore;
  /** where the agent's files are saved (`lurkbot chat`'s: $LURKBOT_HOME/downloads) */
  downloadsDir: string;
}

/** how long a command sent on the user's behalf (/stop, /approve, /deny) waits for the router's answer */
const COMMAND_TIMEOUT_MS = 30_000;
/** after a run's done, how long the prompt waits for the reply's delivery (its files) */
const DELIVERY_WAIT_MS = 2_000;

interface Turn {
  state: TurnState;
  cancelled: boolean;
  /** approvals already asked about (a notice delivered twice asks once) */
  asked: Set<string>;
  finish: (outcome: { stopReason: StopReason } | RpcError) => void;
  timers: NodeJS.Timeout[];
  /** the run's done was seen: the answer, once the reply's delivery is in (or not coming) */
  done?: { stopReason: StopReason };
}

export class AcpSession {
  private readonly channel: TerminalChannel;
  private active: Turn | undefined;
  /** the project directory was told to the agent (with the first prompt) */
  private contextSent = false;
  /** the approvals this session asked the editor about: the only ones a typed /approve or /deny may decide */
  private readonly shownApprovals = new Set<string>();
  /** files being saved and shown, in arrival order: a prompt is answered after them */
  private shown: Promise<void> = Promise.resolve();

  constructor(readonly id: string, private cwd: string, private readonly deps: SessionDeps) {
    this.channel = new TerminalChannel(deps.nc, deps.prefix, id, (msg) => this.onUnsolicited(msg), deps.agentId);
  }

  async open(): Promise<void> {
    await this.channel.open();
  }

  /** session/load with another directory: told to the agent with the next prompt */
  setCwd(cwd: string): void {
    if (cwd !== this.cwd) this.contextSent = false;
    this.cwd = cwd;
  }

  get busy(): boolean {
    return this.active !== undefined;
  }

  update(update: SessionUpdate): void {
    this.deps.client.notify("session/update", { sessionId: this.id, update });
  }

  /** `files`: the prompt's images and files, decoded (prompt-files.ts) */
  prompt(blocks: readonly ContentBlock[], files: readonly PromptFile[] = []): Promise<{ stopReason: StopReason }> {
    if (this.active) throw new RpcError(RPC.invalidRequest, "a prompt is already running in this session: wait for its answer or send session/cancel");
    const text = promptText(blocks, this.contextSent ? undefined : this.cwd);
    const decision = approvalCommand(text);
    if (decision && !this.shownApprovals.has(decision.approvalId)) {
      // the process holds the owner's rights: a typed decision is kept to this session's own approvals
      this.deps.log.warn({ sessionId: this.id, approvalId: decision.approvalId, command: decision.command }, "a typed approval decision for an approval not shown in this session; refused");
      this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: refusedDecisionText(decision) } });
      return Promise.resolve({ stopReason: "end_turn" });
    }
    const hadContext = this.contextSent;
    this.contextSent = true;
    const log = this.deps.log;
    return new Promise((resolve, reject) => {
      const turn: Turn = {
        state: newTurnState(),
        cancelled: false,
        asked: new Set(),
        timers: [],
        finish: (outcome) => {
          if (this.active !== turn) return;
          this.active = undefined;
          for (const t of turn.timers) clearTimeout(t);
          // the files the run sent are shown before the answer
          void this.shown.then(() => (outcome instanceof RpcError ? reject(outcome) : resolve(outcome)));
        },
      };
      this.active = turn;
      const { state } = turn;
      const onRunEvent = (ev: RunEvent) => {
        if (this.active !== turn) return;
        for (const u of mapRunEvent(ev.event, state)) this.update(u);
        const e = ev.event;
        if (e.kind === "done") {
          if (!state.streamed && !e.silent && e.text) this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: e.text } });
          if (e.text) state.streamed = true;
          turn.done = { stopReason: state.lastStopReason === "max_tokens" ? "max_tokens" : "end_turn" };
          // a silent run is not delivered; else the delivery (with the reply's files) normally follows at once
          if (e.silent) turn.finish(turn.done);
          else turn.timers.push(setTimeout(() => turn.finish(turn.done!), DELIVERY_WAIT_MS));
        } else if (e.kind === "error") {
          if (turn.cancelled || e.code === "ABORTED") turn.finish({ stopReason: "cancelled" });
          else turn.finish(new RpcError(RPC.internalError, e.message, { code: e.code, retryable: e.retryable }));
        }
      };
      const onIntermediate = (msg: OutboundMessage) => {
        if (msg.kind !== "approval" || !msg.approval || this.active !== turn || turn.asked.has(msg.approval.approvalId)) return;
        turn.asked.add(msg.approval.approvalId);
        void this.askPermission(msg.approval, turn);
      };
      const send = async () => {
        const attachments = files.length > 0 ? await storePromptFiles(this.deps.media, files) : [];
        if (turn.cancelled) return undefined;
        return this.channel.send(text, this.deps.promptTimeoutMs, { onRunEvent, onIntermediate }, attachments);
      };
      send().then(
        (result) => {
          if (result?.attachments.length) this.showFiles(result.attachments);
          if (this.active !== turn) return;
          if (turn.cancelled || !result) return turn.finish({ stopReason: "cancelled" });
          if (result.kind === "error") return turn.finish(new RpcError(RPC.internalError, result.reply, { code: result.errorCode ?? "INTERNAL" }));
          // no run (a command's notice), or a run whose text was not streamed
          if (!state.streamed && result.reply) this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: result.reply } });
          turn.finish(turn.done ?? { stopReason: "end_turn" });
        },
        (err) => {
          if (!hadContext) this.contextSent = false;
          if (turn.cancelled) return turn.finish({ stopReason: "cancelled" });
          log.warn({ err, sessionId: this.id }, "a prompt failed");
          turn.finish(new RpcError(RPC.internalError, toCliError(err).message));
        },
      );
    });
  }

  /** session/cancel: stop the run (/stop), answer the prompt with `cancelled`. */
  cancel(): void {
    const turn = this.active;
    if (!turn || turn.cancelled) return;
    turn.cancelled = true;
    const answer = () => turn.finish({ stopReason: "cancelled" });
    // the router never answering must not leave the prompt open
    turn.timers.push(setTimeout(answer, COMMAND_TIMEOUT_MS));
    this.command("/stop").finally(() => turn.timers.push(setTimeout(answer, this.deps.cancelGraceMs)));
  }

  /** Asks the editor about an approval the turn's run waits for, and decides it with its answer. */
  private async askPermission(approval: Approval, turn: Turn): Promise<void> {
    this.shownApprovals.add(approval.approvalId);
    const { toolCall, announce } = approvalToolCall(approval, turn.state);
    for (const u of announce) this.update(u);
    this.update({ sessionUpdate: "tool_call_update", toolCallId: toolCall.toolCallId, status: "pending", ...(toolCall.title ? { title: toolCall.title } : {}), ...(toolCall.content?.length ? { content: toolCall.content } : {}) });
    let answer: unknown;
    try {
      answer = await this.deps.client.request("session/request_permission", permissionRequest(this.id, toolCall)).result;
    } catch (err) {
      this.deps.log.warn({ err, approvalId: approval.approvalId }, "the client did not answer the permission request; denying");
    }
    const { decision, cancelled } = decisionOf(answer);
    this.deps.log.info({ approvalId: approval.approvalId, tool: approval.tool, decision, cancelled }, "permission answered");
    if (decision === "approve" && this.active === turn) {
      const t = turn.state.tools.get(toolCall.toolCallId);
      if (t) t.status = "in_progress";
      this.update({ sessionUpdate: "tool_call_update", toolCallId: toolCall.toolCallId, status: "in_progress" });
    }
    await this.command(`/${decision} ${approval.approvalId}`);
  }

  /** A command on the user's behalf, through the router (the terminal's path); failures are logged. */
  private async command(text: string): Promise<void> {
    try {
      const r = await this.channel.send(text, COMMAND_TIMEOUT_MS);
      this.deps.log.debug({ sessionId: this.id, command: text.split(" ")[0], reply: r.reply.slice(0, 200) }, "command answered");
    } catch (err) {
      this.deps.log.warn({ err, sessionId: this.id, command: text.split(" ")[0] }, "a command got no answer");
    }
  }

  private onUnsolicited(msg: OutboundMessage): void {
    if (msg.attachments.length > 0 && !msg.note && msg.kind !== "approval") {
      // files the agent sent (the message tool): shown with the message's text
      this.showFiles(msg.attachments, msg.text);
      return;
    }
    // progress notes (/verbose, /reasoning) and text deliveries of other runs: not part of a prompt's answer
    this.deps.log.debug({ sessionId: this.id, kind: msg.kind, note: msg.note }, "a delivery outside a prompt; not shown");
  }

  /** Saves the files the agent sent and shows them, after those that came before. */
  private showFiles(attachments: readonly Attachment[], text = ""): void {
    this.shown = this.shown.then(async () => {
      try {
        const updates = await showReceived(this.deps.media, attachments, this.deps.downloadsDir, text);
        for (const u of updates) this.update(u);
        this.deps.log.info({ sessionId: this.id, files: attachments.length }, "files from the agent shown");
      } catch (err) {
        this.deps.log.warn({ err, sessionId: this.id }, "files from the agent could not be saved");
      }
    });
  }

  close(): void {
    this.active?.finish(new RpcError(RPC.internalError, "the session closed"));
    this.channel.close();
  }
}
