/**
 * One heartbeat of one agent (seeds 001 §3.7 run_once), as the heartbeat actor runs it:
 *   1. cheap gates, no LLM call: disabled, quiet hours, HEARTBEAT.md missing or effectively
 *      empty, no delivery target, a run in flight in the target session (sessions.get, router.lanes)
 *   2. a system event with the heartbeat prompt injected into the target session, or into
 *      `heartbeat.session` when set (`lurk.inject.<agentId>`, INBOUND, wake now, deliverTo "none":
 *      the router starts the run, with `heartbeat.model` when set; the agent-runner does not
 *      deliver its reply)
 *   3. the run's terminal event; tokens counted; the reply classified (reply.ts)
 *   4. an alert, unless the same text went out within 24 h, delivered by this actor to the target
 *      origin (`lurk.out.<channel>.<conversation>`, OUTBOUND, msgID `heartbeat-<runId>`); with
 *      `includeReasoning`, the run's thinking first, as its own message (`heartbeat-<runId>-reasoning`)
 * Every outcome is one `lurk.evt.heartbeat.<status>` event and the agent's "last" event.
 * The run under way is persisted, so a restarted actor finishes it (from the transcript's marker).
 */
import {
  buildSessionKey, emptyUsage, envelope, heartbeatEventSchema, LurkError, outboundMessageSchema, parseSessionKey, runIdFor, systemInjectSchema,
  type HeartbeatEvent, type Origin, type SessionEntry, type Usage,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { agentWorkspace } from "../../shared/runtime/config.js";
import { resolveHeartbeatConfig, type AgentHeartbeatConfig } from "../../shared/runtime/config-heartbeat.js";
import { runEndFromRecords } from "../../shared/runtime/run-ends.js";
import { heartbeatPrompt, isEffectivelyEmpty, readChecklist } from "./checklist.js";
import type { Clock } from "./clock.js";
import { alertHash, classifyReply } from "./reply.js";
import type { RunEnd, RunEndWatcher } from "./run-ends.js";
import { isWithinActiveHours } from "./schedule.js";
import type { HeartbeatStore, PendingRun } from "./store.js";

export type HeartbeatStatus = HeartbeatEvent["status"];
type EventFields = Partial<Omit<HeartbeatEvent, "type" | "id" | "ts" | "agentId" | "status">>;

const PREVIEW_CHARS = 200;
/** the reasoning sent before an alert, at most */
const REASONING_CHARS = 4_000;
/** session types a "last" target may pick: where a person wrote */
const PERSON_SESSIONS = new Set(["main", "dm", "group", "topic", "thread"]);

export class HeartbeatRunner {
  private readonly busy = new Set<string>();
  /** each agent's settings, merged once: the config does not change while the actor runs */
  private readonly settingsByAgent = new Map<string, AgentHeartbeatConfig>();
  private seq = 0;

  constructor(
    private readonly rt: ActorRuntime,
    private readonly store: HeartbeatStore,
    private readonly runEnds: RunEndWatcher,
    private readonly clock: Clock,
  ) {}

  isBusy(agentId: string): boolean {
    return this.busy.has(agentId);
  }

  settings(agentId: string): AgentHeartbeatConfig {
    let settings = this.settingsByAgent.get(agentId);
    if (!settings) {
      settings = resolveHeartbeatConfig(this.rt.config.heartbeat, agentId);
      this.settingsByAgent.set(agentId, settings);
    }
    return settings;
  }

  enabled(agentId: string): boolean {
    return this.store.get(agentId).enabled ?? this.settings(agentId).enabled;
  }

  /** Runs one heartbeat now; never throws (a failure is a "failed" event). */
  async beat(agentId: string): Promise<HeartbeatEvent> {
    if (this.busy.has(agentId)) return this.record(agentId, "skipped", { reason: "in-progress" });
    this.busy.add(agentId);
    const startedAt = this.clock.now();
    try {
      return await this.attempt(agentId, startedAt);
    } catch (err) {
      const e = LurkError.from(err);
      this.rt.log.warn({ err: e, agentId }, "heartbeat failed");
      await this.store.update(agentId, (s) => ({ ...s, pending: undefined }));
      return this.record(agentId, "failed", { reason: `${e.code}: ${e.message}`, durationMs: this.clock.now() - startedAt });
    } finally {
      this.busy.delete(agentId);
    }
  }

  private async attempt(agentId: string, startedAt: number): Promise<HeartbeatEvent> {
    const cfg = this.settings(agentId);
    const agent = this.rt.config.agents.find((a) => a.id === agentId);
    if (!agent) throw new LurkError("NOT_FOUND", `no agent "${agentId}"`);
    if (cfg.session && parseSessionKey(cfg.session)?.agentId !== agentId) {
      throw new LurkError("CONFIG_INVALID", `heartbeat.session "${cfg.session}" is not a session of agent ${agentId}: use a key that starts with agent:${agentId}:, e.g. agent:${agentId}:cron:heartbeat (per agent: heartbeat.agents.${agentId}.session)`);
    }
    if (!this.enabled(agentId)) return this.record(agentId, "skipped", { reason: "disabled" });
    if (!isWithinActiveHours(cfg.activeHours, startedAt)) return this.record(agentId, "skipped", { reason: "quiet-hours" });
    const checklist = await readChecklist(agentWorkspace(this.rt.config, agent));
    if (checklist === null) return this.record(agentId, "skipped", { reason: "no-heartbeat-file" });
    if (isEffectivelyEmpty(checklist)) return this.record(agentId, "skipped", { reason: "empty-heartbeat-file" });

    const { sessionKey: targetKey, entry } = await this.target(agentId, cfg.target);
    const origin = entry?.lastOrigin;
    if (!origin) return this.record(agentId, "skipped", { reason: "no-target" });
    // the run happens in heartbeat.session when set (its alert still goes to the target's origin)
    const sessionKey = cfg.session ?? targetKey;
    const runEntry = sessionKey === targetKey ? entry : (await this.rt.client.call("sessions", "get", { sessionKey })).session;
    if (await this.inFlight(sessionKey, runEntry)) return this.record(agentId, "skipped", { reason: "requests-in-flight" });

    const injectId = `heartbeat:${agentId}:${startedAt}`;
    const pending: PendingRun = { runId: runIdFor("inject", injectId), injectId, sessionKey, origin, startedAt };
    await this.store.update(agentId, (s) => ({ ...s, pending, lastRunAt: startedAt }));
    const { wait } = this.runEnds.expect(pending.runId, cfg.runTimeoutMs);
    const inject = systemInjectSchema.parse(envelope("lurk.inject.v1", {
      id: injectId, agentId, sessionKey, source: "heartbeat" as const, text: heartbeatPrompt(checklist, cfg.prompt),
      wake: "now" as const, trigger: "heartbeat" as const, deliverTo: "none" as const,
      ...(cfg.model ? { options: { model: cfg.model } } : {}),
    }));
    await this.rt.js.publish(this.rt.subjects.inject(agentId), JSON.stringify(inject), { msgID: injectId });
    this.rt.log.info({ agentId, runId: pending.runId, sessionKey }, "heartbeat run injected");
    return this.finish(agentId, pending, await wait, cfg);
  }

  /** The session the heartbeat runs in: the main session, or for "last" the most recent one with an origin. */
  private async target(agentId: string, target: "main" | "last"): Promise<{ sessionKey: string; entry: SessionEntry | null }> {
    const mainKey = buildSessionKey({ type: "main", agentId });
    if (target === "last") {
      const { sessions } = await this.rt.client.call("sessions", "list", { agentId, limit: 1000 });
      const latest = sessions
        .filter((s) => s.lastOrigin && PERSON_SESSIONS.has(s.sessionType))
        .sort((a, b) => b.updatedAt - a.updatedAt)[0];
      if (latest) return { sessionKey: latest.sessionKey, entry: latest };
    }
    const { session } = await this.rt.client.call("sessions", "get", { sessionKey: mainKey });
    return { sessionKey: mainKey, entry: session };
  }

  /** A run holds the session (sessions' activeRunId) or the router has one active or queued for it. */
  private async inFlight(sessionKey: string, entry: SessionEntry | null): Promise<boolean> {
    if (entry?.activeRunId) return true;
    const { lanes } = await this.rt.client.call("router", "lanes", { sessionKey });
    return lanes.some((l) => l.sessionKey === sessionKey && (l.activeRunId !== undefined || l.queued > 0));
  }

  /** Counts tokens, classifies the reply, delivers an alert; clears the pending run. */
  private async finish(agentId: string, pending: PendingRun, end: RunEnd, cfg: AgentHeartbeatConfig): Promise<HeartbeatEvent> {
    if (end.kind === "stopped") {
      // the store may be closing: leave the run pending for the next instance, record nothing
      return heartbeatEventSchema.parse({ type: "lurk.heartbeat.event.v1", id: `hb-${agentId}-stopped`, ts: this.clock.now(), agentId, status: "failed", reason: "actor stopping; the run is finished after the restart" });
    }
    const durationMs = Math.max(0, this.clock.now() - pending.startedAt);
    const where = pending.origin ? { to: pending.origin.conversation, channel: pending.origin.channel } : {};
    const tokens = end.kind === "done" ? usedTokens(end.usage) : 0;
    await this.store.update(agentId, (s) => ({ ...s, pending: undefined, tokensSpent: s.tokensSpent + tokens }));
    if (end.kind === "timeout") return this.record(agentId, "failed", { reason: `timeout: no end of run ${pending.runId} within ${cfg.runTimeoutMs} ms`, durationMs, ...where });
    if (end.kind === "error") return this.record(agentId, "failed", { reason: `${end.code}: ${end.message}`.slice(0, 500), durationMs, ...where });
    const usage = { usage: end.usage };
    const verdict = classifyReply(end.text, end.silent, cfg.ackMaxChars);
    if (verdict.status === "ok-empty") return this.record(agentId, "ok-empty", { durationMs, ...usage, ...where });
    if (verdict.status === "ok-token") return this.record(agentId, "ok-token", { durationMs, ...usage, ...where, ...(verdict.rest ? { preview: verdict.rest.slice(0, PREVIEW_CHARS) } : {}) });
    const preview = verdict.text.slice(0, PREVIEW_CHARS);
    const hash = alertHash(verdict.text);
    const now = this.clock.now();
    if (this.store.isRecentAlert(agentId, hash, now)) return this.record(agentId, "skipped", { reason: "duplicate", preview, durationMs, ...usage, ...where });
    if (!pending.origin) return this.record(agentId, "skipped", { reason: "no-target", preview, durationMs, ...usage });
    if (cfg.includeReasoning) {
      const reasoning = await this.reasoningOf(pending);
      if (reasoning) await this.deliver(pending, pending.origin, `Reasoning:\n${reasoning}`, "reasoning");
    }
    await this.deliver(pending, pending.origin, verdict.text);
    await this.store.rememberAlert(agentId, hash, now);
    return this.record(agentId, "sent", { preview, durationMs, ...usage, ...where });
  }

  /** The thinking of the run's last answer (seeds include_reasoning), cut at REASONING_CHARS; "" when it has none. */
  private async reasoningOf(pending: PendingRun): Promise<string> {
    const { records } = await this.rt.client.call("sessions", "run", { sessionKey: pending.sessionKey, runId: pending.runId });
    const answer = records.filter((r) => r.kind === "message" && r.message?.role === "assistant").at(-1)?.message;
    const thinking = answer?.role === "assistant" ? answer.content.flatMap((b) => (b.type === "thinking" && b.text.trim() ? [b.text.trim()] : [])).join("\n\n") : "";
    return thinking.length > REASONING_CHARS ? `${thinking.slice(0, REASONING_CHARS)}…` : thinking;
  }

  /** One outbound message of the run to the target's origin; `part` tells the reasoning from the alert. */
  private async deliver(pending: PendingRun, origin: Origin, text: string, part?: "reasoning"): Promise<void> {
    const id = part ? `heartbeat-${pending.runId}-${part}` : `heartbeat-${pending.runId}`;
    const message = outboundMessageSchema.parse({
      type: "lurk.outbound.message.v1", id, ts: this.clock.now(), runId: pending.runId, sessionKey: pending.sessionKey,
      channel: origin.channel, conversation: origin.conversation, kind: "notice", replyTo: [], text, attachments: [],
      ...(origin.accountId ? { accountId: origin.accountId } : {}),
      ...(origin.peer ? { peer: origin.peer } : {}),
    });
    await this.rt.js.publish(this.rt.subjects.outbound(origin.channel, origin.conversation), JSON.stringify(message), { msgID: id });
  }

  /**
   * A heartbeat run left pending by a previous instance: finished from the transcript's end
   * marker when the run ended meanwhile, else awaited for the rest of its time.
   */
  async recover(agentId: string): Promise<HeartbeatEvent | null> {
    const pending = this.store.get(agentId).pending;
    if (!pending || this.busy.has(agentId)) return null;
    this.busy.add(agentId);
    try {
      const cfg = this.settings(agentId);
      const remaining = pending.startedAt + cfg.runTimeoutMs - this.clock.now();
      const waiter = this.runEnds.expect(pending.runId, Math.max(1, remaining));
      const { status, records } = await this.rt.client.call("sessions", "run", { sessionKey: pending.sessionKey, runId: pending.runId });
      let end: RunEnd;
      if (status === "done" || status === "error" || status === "aborted") {
        waiter.cancel();
        const ended = runEndFromRecords(records);
        end = status === "done"
          ? { kind: "done", text: ended?.text ?? "", usage: ended?.usage ?? emptyUsage(), silent: ended?.silent === true }
          : { kind: "error", code: ended?.errorCode ?? status.toUpperCase(), message: ended?.text ?? `the run ended: ${status}` };
      } else {
        end = await waiter.wait;
      }
      this.rt.log.info({ agentId, runId: pending.runId, end: end.kind }, "recovered a pending heartbeat run");
      return await this.finish(agentId, pending, end, cfg);
    } catch (err) {
      this.rt.log.warn({ err, agentId, runId: pending.runId }, "could not recover a pending heartbeat run yet");
      return null;
    } finally {
      this.busy.delete(agentId);
    }
  }

  /** Stores the event as the agent's last one and publishes `lurk.evt.heartbeat.<status>`. */
  private async record(agentId: string, status: HeartbeatStatus, fields: EventFields): Promise<HeartbeatEvent> {
    const ts = this.clock.now();
    const indicatorType = status === "sent" ? "alert" : status === "failed" ? "error" : status === "skipped" ? undefined : "ok";
    const event = heartbeatEventSchema.parse({
      type: "lurk.heartbeat.event.v1", id: `hb-${agentId}-${ts}-${++this.seq}`, ts, agentId, status,
      hasMedia: false, silent: status === "ok-empty" || status === "ok-token", ...(indicatorType ? { indicatorType } : {}), ...fields,
    });
    await this.store.update(agentId, (s) => ({ ...s, last: event }), { durable: status !== "skipped" });
    try {
      this.rt.nc.publish(this.rt.subjects.event("heartbeat", status), JSON.stringify(event));
    } catch (err) {
      this.rt.log.warn({ err, agentId, status }, "could not publish the heartbeat event");
    }
    this.rt.log.info({ agentId, status, reason: event.reason }, "heartbeat");
    return event;
  }
}

function usedTokens(usage: Usage): number {
  return usage.total > 0 ? usage.total : usage.input + usage.output;
}
