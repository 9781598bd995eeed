/**
 * One active instance of an actor that several hosts may run (cron, heartbeat, subagents): the
 * lease `<actor>` in lurk_leases (lease.ts) plus the relay of its requests (active-relay.ts;
 * cron serves requests on every instance from its replicated jobs and does not use it).
 *
 * Contract:
 * - `isActive()` is true only after `takeOver` finished for the current term (e.g. the replicated
 *   state was loaded) and while the lease is fresh; the actor acts (timers, events, requests) only then.
 * - On losing the lease `standBy` runs at once (drop timers; work already started goes on) and
 *   relayed requests go to the next holder. A `standBy` that returns a promise is waited for
 *   before the next takeover of this instance starts (takeovers and stand-bys run in order).
 * - `start()` makes the first try before it resolves, so an actor reports started either active
 *   (state loaded) or standing by. `stop()` gives the lease up: a standby takes over at once.
 * - Each change of role is logged and published as `lurk.evt.<actor>.active` (once it acts) /
 *   `.standby`.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { EndpointActor } from "../contract/index.js";
import { ActiveRelay } from "./active-relay.js";
import type { ActorRuntime } from "./actor.js";
import { Lease, LeaseKeeper, type LeaseOptions } from "./lease.js";

export interface ActiveInstanceOptions {
  ttlMs: number;
  renewMs: number;
  /** runs when this instance took the lease, before it counts as active (load the replicated state) */
  takeOver(): Promise<void>;
  /** runs once it is active (a first tick, recovering work left under way) */
  activated?(): void;
  /** runs instead of `activated` when the lease was lost again while `takeOver` ran (undo what it started) */
  abandoned?(): void;
  /** runs when this instance lost the lease (a next takeover waits for its promise) */
  standBy(): void | Promise<void>;
  /** opt-in: a live lease whose holder this declares gone is taken at once (lease.ts, dead-holder.ts) */
  holderGone?: LeaseOptions["holderGone"];
}

export class ActiveInstance<A extends EndpointActor> {
  readonly relay: ActiveRelay<A>;
  private ready = false;
  private takingOver: Promise<void> = Promise.resolve();

  private constructor(private readonly rt: ActorRuntime, actor: A, private readonly keeper: LeaseKeeper, /** this instance in the lease (unique per instance) */ readonly holder: string) {
    this.relay = new ActiveRelay(rt, actor, () => this.isActive());
  }

  static async open<A extends EndpointActor>(rt: ActorRuntime, actor: A, opts: ActiveInstanceOptions): Promise<ActiveInstance<A>> {
    const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const lease = await Lease.open(rt.nc, { key: actor, holder, instance: rt.service.info().id, ttlMs: opts.ttlMs, ...(opts.holderGone ? { holderGone: opts.holderGone } : {}) });
    let self!: ActiveInstance<A>;
    const keeper = new LeaseKeeper(lease, {
      intervalMs: opts.renewMs,
      onChange: (active) => self.onRoleChange(active, holder, opts),
      onError: (err) => rt.log.warn({ err }, `${actor} lease check failed`),
    });
    self = new ActiveInstance(rt, actor, keeper, holder);
    return self;
  }

  isActive(): boolean {
    return this.ready && this.keeper.isActive;
  }

  /** The first lease try (and a takeover) before it resolves, then the periodic renewals. */
  async start(): Promise<void> {
    await this.keeper.tick();
    await this.takingOver;
    this.keeper.start();
  }

  /** Gives the lease up (after the caller settled its work) and stops answering relayed requests. */
  async stop(): Promise<void> {
    await this.keeper.stop();
    await this.takingOver;
    this.relay.deactivate();
  }

  private onRoleChange(active: boolean, holder: string, opts: ActiveInstanceOptions): void {
    this.rt.log.info({ holder, active }, active ? "lease taken: taking over" : "lease lost: standing by");
    if (!active) {
      this.ready = false;
      this.relay.deactivate();
      this.rt.emit("standby", { holder });
      const standingBy = opts.standBy();
      if (standingBy) {
        this.takingOver = this.takingOver.then(() => standingBy).catch((err: unknown) => {
          this.rt.log.warn({ err }, "standing by failed in part");
        });
      }
      return;
    }
    this.takingOver = this.takingOver.then(async () => {
      try {
        await opts.takeOver();
      } catch (err) {
        this.rt.log.warn({ err }, "taking over failed in part; going on with this host's copy");
      }
      if (!this.keeper.isActive) return opts.abandoned?.();
      this.ready = true;
      this.relay.activate();
      this.rt.emit("active", { holder }); // acting now: state loaded, relayed requests answered
      opts.activated?.();
    });
  }
}
