/**
 * The tool calls an actor is running (or holding for an approval), by run, so a caller that
 * gives up can stop them; used by the tools actor and by serveTools (tool-serve.ts) for
 * extension tool actors. Each call gets an AbortSignal that fires when
 *  - `lurk.tools.cancel` names its run (and its toolCallId, or none: every call of the run);
 *  - the run is aborted (`lurk.run.ctl.<runId>` with action "abort": /stop, a run abort) and
 *  - the run ends (`lurk.run.evt.<runId>.done|error`: e.g. the runner's own run timeout), both
 *    only with `followRuns` (the actor's NATS user must be allowed to subscribe to them);
 *  - the actor stops.
 *  - the same call (run and toolCallId) arrives again: the older one is superseded (its caller
 *    restarted or re-sent it, and only the newest request has someone waiting for the reply).
 * The call then ends with ABORTED (in the tools actor the way a deadline ends it: the worker
 * task aborted, an exec child's process group killed). Every instance listens (no queue group): only the one
 * holding the call acts.
 */
import type { Subscription } from "@nats-io/transport-node";
import { LurkError, runControlSchema, safeParseJson, TOOLS_CANCEL_MAX_BYTES, toolsCancelSchema } from "../contract/index.js";
import type { ActorRuntime } from "./actor.js";
import { subscribeRunEnds } from "./run-ends.js";

interface Inflight {
  toolCallId: string;
  controller: AbortController;
}

export class InflightCalls {
  private readonly byRun = new Map<string, Set<Inflight>>();
  private readonly subs: Subscription[] = [];
  private runEnds: { stop(): void } | undefined;

  constructor(private readonly rt: ActorRuntime, private readonly opts: { followRuns: boolean } = { followRuns: true }) {}

  /** Listens for cancellations on the bus; stopped with the actor. */
  listen(): void {
    const { rt } = this;
    this.subs.push(rt.nc.subscribe(rt.subjects.toolsCancel, {
      callback: (err, msg) => {
        if (err) return rt.log.warn({ err }, "tool cancel subscription failed");
        try {
          const parsed = toolsCancelSchema.safeParse(safeParseJson(msg.data, { maxBytes: TOOLS_CANCEL_MAX_BYTES }));
          if (!parsed.success) throw new LurkError("VALIDATION_FAILED", parsed.error.issues[0]?.message ?? "invalid tool cancel");
          const { runId, toolCallId, reason } = parsed.data;
          this.cancel(runId, toolCallId, reason ? `the caller cancelled it: ${reason}` : "the caller cancelled it");
        } catch (e) {
          rt.log.warn({ err: e }, "ignoring a malformed tool cancel message");
        }
      },
    }));
    if (this.opts.followRuns) this.followRuns();
    rt.onStop({ stop: async () => this.stop() });
  }

  /** Run aborts and run ends cancel the run's calls. */
  private followRuns(): void {
    const { rt } = this;
    const ctlPrefix = rt.subjects.runControl("x").slice(0, -1);
    this.subs.push(rt.nc.subscribe(rt.subjects.runControlAll, {
      callback: (err, msg) => {
        if (err) return rt.log.warn({ err }, "run control subscription failed");
        const runId = msg.subject.slice(ctlPrefix.length);
        if (!this.byRun.has(runId)) return; // not ours: not even parsed
        try {
          const parsed = runControlSchema.safeParse(safeParseJson(msg.data, rt.limits));
          if (parsed.success && parsed.data.action === "abort" && parsed.data.runId === runId) this.cancel(runId, undefined, "the run was aborted");
        } catch {
          rt.log.warn({ subject: msg.subject }, "ignoring a malformed run control message");
        }
      },
    }));
    this.runEnds = subscribeRunEnds(rt.nc, rt.subjects, rt.limits, rt.log, (runId, kind) => {
      if (this.byRun.has(runId)) this.cancel(runId, undefined, kind === "done" ? "the run ended" : "the run ended with an error");
    });
  }

  /** A signal for one call (also fired by `parent`, the actor's); `done` forgets the call. */
  track(runId: string, toolCallId: string, parent: AbortSignal): { signal: AbortSignal; done(): void } {
    const controller = new AbortController();
    const entry: Inflight = { toolCallId, controller };
    let set = this.byRun.get(runId);
    if (!set) this.byRun.set(runId, (set = new Set()));
    // the same call again (its runner restarted, or re-sent it): the older one has no caller any more
    this.cancel(runId, toolCallId, "superseded by a retry of the same call");
    set.add(entry);
    const onParent = () => controller.abort(parent.reason);
    if (parent.aborted) onParent();
    else parent.addEventListener("abort", onParent, { once: true });
    return {
      signal: controller.signal,
      done: () => {
        parent.removeEventListener("abort", onParent);
        const calls = this.byRun.get(runId);
        calls?.delete(entry);
        if (calls?.size === 0) this.byRun.delete(runId);
      },
    };
  }

  /** Cancels the calls of a run (one of them when `toolCallId` is given); how many it stopped. */
  cancel(runId: string, toolCallId: string | undefined, why: string): number {
    let n = 0;
    for (const entry of this.byRun.get(runId) ?? []) {
      if (toolCallId !== undefined && entry.toolCallId !== toolCallId) continue;
      if (entry.controller.signal.aborted) continue;
      entry.controller.abort(new LurkError("ABORTED", `the tool call was cancelled (${why})`));
      n++;
    }
    if (n > 0) this.rt.log.info({ runId, toolCallId, cancelled: n, why }, "tool calls cancelled");
    return n;
  }

  private stop(): void {
    for (const sub of this.subs) sub.unsubscribe();
    this.subs.length = 0;
    this.runEnds?.stop();
  }
}
