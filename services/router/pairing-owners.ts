/**
 * DM pairing decisions and the owners' part in them:
 * - `decidePairing`: approve or deny a pending code (the `router.pairing` endpoint, `lurkbot
 *   pairing`, and an owner's `/pair approve|deny CODE` in chat); an approved sender is told in the
 *   conversation they wrote from;
 * - `notifyOwners`: a new pairing request is told to each owner (routing.commands.owners) in the
 *   DM they last wrote to the bot from (the sessions' last origins; the terminal has none), so
 *   they can answer `/pair approve CODE` there. An owner who never wrote a DM is not told (the
 *   request still shows in `lurkbot pairing list` and the `pairing_requested` event).
 */
import { createHash } from "node:crypto";
import { LurkError, type PairingPending } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { isOwner, OWNER_CHANNEL } from "../../shared/runtime/access-policy.js";
import { publishNotice } from "./notices.js";
import type { PairingStore } from "./pairing.js";

/** Approves or denies a live code; NOT_FOUND (saying what to do) for an unknown or expired one. */
export async function decidePairing(rt: ActorRuntime, pairing: PairingStore, action: "approve" | "deny", code: string, decidedBy?: string): Promise<PairingPending> {
  const decided = action === "approve" ? await pairing.approve(code, decidedBy) : await pairing.deny(code);
  if (!decided) throw new LurkError("NOT_FOUND", `no pending pairing code ${code.toUpperCase()} (it may have expired; the sender gets a new one by writing again)`);
  rt.emit(`pairing_${action === "approve" ? "approved" : "denied"}`, { channel: decided.channel, code: decided.code }, "info");
  if (action === "approve" && decided.conversation) {
    await publishNotice(rt, { channel: decided.channel, conversation: decided.conversation, peer: { kind: "dm", id: decided.senderId } }, "You are approved: write your message again.", { deliveryId: `pairing-approved:${decided.channel}:${decided.code}` })
      .catch((err) => rt.log.warn({ err }, "could not tell the sender about the approval"));
  }
  return decided;
}

/** Tells every owner with a known DM about a new pairing request; never throws. */
export async function notifyOwners(rt: ActorRuntime, request: { channel: string; senderId: string; senderName?: string; code: string; expiresAt: number }): Promise<number> {
  try {
    const { sessions } = await rt.client.call("sessions", "list", { limit: 10_000 });
    const latest = new Map<string, { at: number; origin: NonNullable<(typeof sessions)[number]["lastOrigin"]> }>();
    for (const s of sessions) {
      const origin = s.lastOrigin;
      if (!origin?.sender || origin.peer?.kind !== "dm" || origin.channel === OWNER_CHANNEL) continue;
      if (!isOwner({ channel: origin.channel, sender: origin.sender }, rt.config)) continue;
      const who = `${origin.channel}:${origin.sender.id}`;
      if ((latest.get(who)?.at ?? -1) < s.updatedAt) latest.set(who, { at: s.updatedAt, origin });
    }
    const minutes = Math.max(1, Math.round((request.expiresAt - Date.now()) / 60_000));
    const who = `${request.senderName ? `${request.senderName} ` : ""}(${request.channel}:${request.senderId})`;
    const text = [
      `New pairing request: ${who} wants to talk to the bot.`,
      `Code ${request.code}, valid ${minutes} min. Answer /pair approve ${request.code} or /pair deny ${request.code}.`,
    ].join("\n");
    for (const [owner, { origin }] of latest) {
      await publishNotice(rt, { channel: origin.channel, conversation: origin.conversation, peer: origin.peer!, ...(origin.accountId ? { accountId: origin.accountId } : {}) }, text, {
        deliveryId: `pairing-request:${request.channel}:${request.code}:${createHash("sha256").update(owner).digest("hex").slice(0, 16)}`,
      });
    }
    return latest.size;
  } catch (err) {
    rt.log.warn({ err, code: request.code }, "could not tell the owners about a pairing request");
    return 0;
  }
}
