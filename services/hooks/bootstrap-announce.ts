/**
 * Tells agent-runners which agents have `agent:bootstrap` hooks, so a run asks
 * `lurk.hooks.bootstrap` only then (no hook: no round trip): the `lurk_hooks` bucket holds
 * `bootstrap.<agentId>` = { hooks, at } for each agent whose running hooks want it, and no key for
 * the others. Written at start and after each reload that changed what runs, and again every
 * BOOTSTRAP_HOOKS_REFRESH_MS: the bucket drops a value after BOOTSTRAP_HOOKS_TTL_MS, so when no
 * hooks instance runs any more the runners stop asking within that time (meanwhile a request
 * finds no responder and fails at once). A stopping instance deletes nothing (another may
 * serve). Writes go out one at a time; a failed one is logged and the next update retries.
 */
import { Kvm, type KV } from "@nats-io/kv";
import { BOOTSTRAP_HOOKS_REFRESH_MS, bootstrapHooksKey, HOOKS_BUCKET, type BootstrapHooksEntry } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { hookWants } from "../../shared/runtime/hooks/events.js";
import type { HookRegistry } from "./registry.js";

export class BootstrapAnnouncer {
  private kv: Promise<KV> | undefined;
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private current: HookRegistry | undefined;
  /** what the bucket holds per agent as far as this instance wrote it ("" : deleted) */
  private readonly written = new Map<string, string>();

  constructor(private readonly rt: ActorRuntime) {}

  /** Writes what `registry` runs (keys of agents without bootstrap hooks are deleted). Resolves once written. */
  update(registry: HookRegistry): Promise<void> {
    this.current = registry;
    return this.write(registry, false);
  }

  start(): void {
    this.timer = setInterval(() => void (this.current && this.write(this.current, true)), BOOTSTRAP_HOOKS_REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private write(registry: HookRegistry, refresh: boolean): Promise<void> {
    const run = this.chain.then(async () => {
      const kv = await this.bucket();
      for (const agentId of this.rt.config.agents.map((a) => a.id)) {
        const hooks = registry.agents.get(agentId)?.hooks.filter((h) => hookWants(h.events, "agent:bootstrap")).map((h) => h.name) ?? [];
        const value = hooks.join(",");
        const key = bootstrapHooksKey(agentId);
        if (hooks.length === 0) {
          // deleted once (at start too: a previous configuration's key goes)
          if (this.written.get(agentId) === "") continue;
          await kv.delete(key);
        } else {
          if (!refresh && this.written.get(agentId) === value) continue;
          const entry: BootstrapHooksEntry = { hooks, at: Date.now() };
          await kv.put(key, JSON.stringify(entry));
        }
        this.written.set(agentId, value);
      }
    });
    this.chain = run.catch((err) => {
      this.written.clear();
      this.rt.log.warn({ err }, "could not tell agent-runners which agents have agent:bootstrap hooks (lurk_hooks bucket); the next reload or refresh tries again");
    });
    return this.chain;
  }

  private bucket(): Promise<KV> {
    return (this.kv ??= new Kvm(this.rt.nc).open(HOOKS_BUCKET).catch((err: unknown) => {
      this.kv = undefined;
      throw err;
    }));
  }
}
