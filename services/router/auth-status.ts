/**
 * `/status`'s auth line: one line per provider whose auth profiles are cooling down or disabled
 * ("anthropic: 1 of 2 profiles cooling down for 3 min (rate_limit)"), from every agent-runner's
 * `lurk.agent-runner.auth_state` (shared/runtime/auth-state-view.ts). Waits at most
 * STATUS_FIRST_MS for the first runner; no runner, an error or all profiles usable: no line.
 */
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { gatherAuthState, unavailableLines } from "../../shared/runtime/auth-state-view.js";

const STATUS_FIRST_MS = 1_000;
const STATUS_STALL_MS = 150;

export async function authStatusLines(rt: ActorRuntime): Promise<string[]> {
  try {
    const view = await gatherAuthState(rt.nc, rt.config.nats.prefix, { firstMs: STATUS_FIRST_MS, stallMs: STATUS_STALL_MS });
    return unavailableLines(view);
  } catch (err) {
    rt.log.debug({ err }, "/status: the agent-runners' auth state could not be read");
    return [];
  }
}
