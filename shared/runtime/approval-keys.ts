/**
 * The public keys of the approvals instances, for verifying approval tokens (approval-gate.ts).
 * Every approvals instance (one per host, approvals/keys.ts) signs with its own key and
 * publishes it as `approvalsPublicKey` in its `$SRV.INFO` metadata; a token signed by any of them
 * is accepted.
 *
 * Contract:
 * - `verify(token)` checks the token against the keys known here; the first call gathers them
 *   (every instance that answers `$SRV.INFO.approvals` within a short window). When none
 *   verifies it gathers again (a new instance may have started) and retries, gathering at most
 *   once every REFRESH_GAP_MS: a token that fails within the gap waits for the next gather, so a
 *   new instance's first token is never refused for a stale set, and forged tokens cost one
 *   gather per gap at most.
 * - A key stays trusted while its instance answers, and for `retainMs` (the token TTL) after the
 *   first gather it was missing from: the tokens it signed before its instance stopped (a
 *   takeover on another host) still verify until they expire anyway.
 * - Throws UNAVAILABLE when no key is known and no instance answered.
 */
import type { KeyObject } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { LurkError } from "../contract/index.js";
import { sleepUnlessAborted } from "./abortable-sleep.js";
import { publicKeyFromBase64, verifyApprovalToken, type ApprovalTokenPayload } from "./approval-token.js";
import { gatherReplies } from "./gather.js";

export const REFRESH_GAP_MS = 2_000;

const infoSchema = z.object({ metadata: z.record(z.string(), z.string()).nullish() });

interface KnownKey {
  key: KeyObject;
  /** when a gather first missed this key's instance */
  missingSince?: number;
}

export class ApprovalKeys {
  private readonly keys = new Map<string, KnownKey>();
  private lastGather = 0;
  private gathering: Promise<void> | undefined;

  /** `retainMs`: how long a key stays trusted after its instance stopped answering (the token TTL); `signal` ends a wait for the next gather */
  constructor(private readonly nc: NatsConnection, private readonly retainMs: number, private readonly signal: AbortSignal) {}

  /** The payload of a token signed by a known approvals instance; null when none signed it. */
  async verify(token: string): Promise<ApprovalTokenPayload | null> {
    const first = this.lastGather === 0;
    if (first) await this.gather();
    let payload = this.check(token);
    if (!payload && !first) {
      await this.gather();
      payload = this.check(token);
    }
    if (!payload && this.keys.size === 0) throw new LurkError("UNAVAILABLE", "no approvals service answered $SRV.INFO (is the approvals actor running?)");
    return payload;
  }

  private check(token: string): ApprovalTokenPayload | null {
    for (const { key } of this.keys.values()) {
      const payload = verifyApprovalToken(key, token);
      if (payload) return payload;
    }
    return null;
  }

  /** One gather at a time, at most one per REFRESH_GAP_MS (a caller inside the gap waits for it). */
  private gather(): Promise<void> {
    this.gathering ??= (async () => {
      const wait = this.lastGather + REFRESH_GAP_MS - Date.now();
      if (wait > 0) await sleepUnlessAborted(wait, this.signal);
      try {
        await this.collect();
      } finally {
        this.lastGather = Date.now();
        this.gathering = undefined;
      }
    })();
    return this.gathering;
  }

  private async collect(): Promise<void> {
    let published: string[];
    try {
      const { replies } = await gatherReplies(this.nc, "$SRV.INFO.approvals", {}, infoSchema, { maxWaitMs: 2_000, stallMs: 300 });
      published = replies.map((r) => r.metadata?.approvalsPublicKey).filter((k): k is string => !!k);
    } catch {
      return; // no responders or no permission: keep what is known
    }
    const now = Date.now();
    for (const b64 of published) {
      const known = this.keys.get(b64);
      if (known) delete known.missingSince;
      else {
        try {
          this.keys.set(b64, { key: publicKeyFromBase64(b64) });
        } catch {
          // not a public key: ignored
        }
      }
    }
    for (const [b64, known] of this.keys) {
      if (published.includes(b64)) continue;
      known.missingSince ??= now;
      if (now - known.missingSince > this.retainMs) this.keys.delete(b64);
    }
  }
}
