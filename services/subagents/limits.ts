/**
 * Spawn limits (config `subagents`): nesting depth, children per requester session and
 * children running overall. A refusal is a LIMIT_EXCEEDED error whose details name the limit
 * (`{ limit: "maxDepth" | "maxChildrenPerSession" | "maxConcurrent", max, current }`).
 */
import { isSubagentSessionKey, LurkError, type SubagentRecord } from "../../shared/contract/index.js";

export interface SpawnLimits {
  maxDepth: number;
  maxChildrenPerSession: number;
  maxConcurrent: number;
}

type Limited = Pick<SubagentRecord, "requesterSessionKey" | "status" | "depth">;

/**
 * The depth of a new child of `requesterSessionKey`: one more than the requester's own depth
 * (a subagent session unknown to the store counts as depth 1).
 */
export function childDepth(requesterSessionKey: string, requesterRecord: Pick<SubagentRecord, "depth"> | undefined): number {
  if (requesterRecord) return requesterRecord.depth + 1;
  return isSubagentSessionKey(requesterSessionKey) ? 2 : 1;
}

/** Throws LIMIT_EXCEEDED when `candidate` would break a limit, given every stored child. */
export function checkSpawnLimits(all: readonly Limited[], candidate: Limited, limits: SpawnLimits): void {
  if (candidate.depth > limits.maxDepth) {
    throw refusal("maxDepth", limits.maxDepth, candidate.depth,
      limits.maxDepth === 1
        ? "a subagent cannot spawn another subagent (subagents.maxDepth is 1); do the work yourself"
        : `subagents may nest at most ${limits.maxDepth} deep (subagents.maxDepth); this child would be at depth ${candidate.depth}`);
  }
  const siblings = all.filter((r) => r.requesterSessionKey === candidate.requesterSessionKey && (r.status === "running" || r.status === "announcing")).length;
  if (siblings >= limits.maxChildrenPerSession) {
    throw refusal("maxChildrenPerSession", limits.maxChildrenPerSession, siblings,
      `this session has ${siblings} subagents running already (subagents.maxChildrenPerSession is ${limits.maxChildrenPerSession}); wait for one to finish or stop one (lurkbot subagents stop)`);
  }
  const running = all.filter((r) => r.status === "running").length;
  if (running >= limits.maxConcurrent) {
    throw refusal("maxConcurrent", limits.maxConcurrent, running,
      `${running} subagents are running already (subagents.maxConcurrent is ${limits.maxConcurrent}); try again when one has finished`);
  }
}

function refusal(limit: keyof SpawnLimits, max: number, current: number, message: string): LurkError {
  return new LurkError("LIMIT_EXCEEDED", message, { details: { limit, max, current } });
}
