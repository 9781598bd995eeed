/**
 * One /sync batch, in order: `m.direct` (which rooms are DMs), invites (joined as `autoJoin`
 * says), then each joined room: a limited timeline's gap first (its older events fetched with
 * /messages, gap.ts, oldest first), its membership and encryption state, then its messages, each
 * stored in LURK_INBOUND with its files (inbound.ts, files.ts) while typing shows during its run,
 * and users' reactions and their redactions, in timeline order (reactions.ts).
 * `handle` returns each room's last timeline event id, which the loop stores with `next_batch`
 * (where the next gap's catch-up stops).
 * Encrypted rooms are not read. A room is encrypted by its `m.room.encryption` state event only;
 * an `m.room.encrypted` message (which any member can send into any room) in a room not known to
 * be encrypted is checked against the room's state (encryption.ts) before anything changes. The
 * first time the channel sees an encrypted room it sends one plain notice there (once per room,
 * kept in LMDB; notices at least NOTICE_GAP_MS apart) and logs a warning; nothing is answered in
 * such a room, not even a plain message (the answer would go there unencrypted). The initial sync
 * of a fresh install takes rooms, invites and their encryption state, no messages.
 * A step that may succeed later (bus or homeserver unreachable) throws: the loop takes the
 * batch again; what can never succeed (a join the homeserver refuses, an unstorable message, a
 * gap the homeserver will not page) is logged and skipped.
 */
import { dmRules, listMatches } from "../../shared/runtime/access-policy.js";
import { isUnstorable, publishWatched, type ChannelContext } from "../../shared/runtime/channel/index.js";
import type { RunTyping } from "../../shared/runtime/channel/run-typing.js";
import type { MatrixChannelConfig } from "../../shared/runtime/config-channels.js";
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import { MatrixError, type MatrixApi } from "./api.js";
import type { EncryptionGate } from "./encryption.js";
import { storeFiles } from "./files.js";
import { fetchGap } from "./gap.js";
import { eventToInbound, type BotIdentity } from "./inbound.js";
import { DisplayNames } from "./names.js";
import { takeReaction, type ReactionDeps, type ReactionLog } from "./reactions.js";
import type { MatrixState } from "./rooms.js";
import { textContent, txnIdFor } from "./send.js";
import { TIMELINE_TYPES } from "./sync.js";
import { directContentSchema, memberContentSchema, roomEventSchema, type JoinedRoom, type RoomEvent, type SyncResponse } from "./wire.js";

type Ctx = ChannelContext<MatrixChannelConfig>;

export const ENCRYPTED_NOTICE = "I can't read encrypted messages: this assistant does not support Matrix end-to-end encryption, so I will not answer in this room. "
  + "To talk to me, start a direct chat or room with encryption turned off (Element: turn off \"Enable end-to-end encryption\" when creating it) and invite me there; encryption cannot be turned off in an existing room.";
const NOTICE_GAP_MS = 1_000;
const WATCH_MAX_MS = 30 * 60_000;
/** what a gap's /messages pages hold: the sync timeline's event types */
const GAP_FILTER = { types: TIMELINE_TYPES };

const parseEvents = (list: { events?: unknown[] } | undefined): RoomEvent[] =>
  (list?.events ?? []).flatMap((e) => { const p = roomEventSchema.safeParse(e); return p.success ? [p.data] : []; });

/** A homeserver answer that another try may change (unreachable, 5xx, 429). */
const transient = (err: unknown) => err instanceof MatrixError && (err.status === 0 || err.status === 429 || err.status >= 500);

export class BatchHandler {
  private lastNoticeAt = 0;
  private readonly names = new DisplayNames();
  /** rooms told about (debug) an m.room.encrypted event in a room without encryption, this run */
  private readonly strayEncrypted = new Set<string>();
  private readonly reactions: ReactionDeps;

  constructor(private readonly ctx: Ctx, private readonly api: MatrixApi, private readonly state: MatrixState, private readonly bot: BotIdentity, private readonly typing: RunTyping<string>, private readonly gate: EncryptionGate, reactionLog: ReactionLog) {
    this.reactions = { ctx, log: reactionLog, bot, isDirect: (roomId) => this.isDirect(roomId), nameOf: (roomId, userId) => this.names.get(roomId, userId) };
  }

  /** Takes one batch (`since`: the token it was asked from; undefined: the initial sync); returns each room's last timeline event id. */
  async handle(batch: SyncResponse, since: string | undefined): Promise<Map<string, string>> {
    const lastEvents = new Map<string, string>();
    for (const ev of parseEvents(batch.account_data)) {
      if (ev.type !== "m.direct") continue;
      const direct = directContentSchema.safeParse(ev.content);
      if (direct.success) await this.state.setDirect(Object.values(direct.data).flat());
    }
    for (const [roomId, room] of Object.entries(batch.rooms?.invite ?? {})) await this.invite(roomId, parseEvents(room.invite_state));
    for (const roomId of Object.keys(batch.rooms?.leave ?? {})) {
      this.names.forget(roomId);
      await this.state.forgetRoom(roomId);
    }
    for (const [roomId, room] of Object.entries(batch.rooms?.join ?? {})) {
      const last = await this.room(roomId, room, since);
      if (last) lastEvents.set(roomId, last);
    }
    return lastEvents;
  }

  /** Whether an invite from `inviter` is accepted (autoJoin "allowlist": owners and the Matrix DM allowFrom). */
  mayJoin(inviter: string): boolean {
    const { autoJoin } = this.ctx.settings;
    if (autoJoin === "always") return true;
    if (autoJoin === "off") return false;
    const config = this.ctx.config;
    return listMatches(config.routing.commands.owners, "matrix", inviter) || listMatches(dmRules("matrix", config).allowFrom, "matrix", inviter);
  }

  private async invite(roomId: string, events: RoomEvent[]): Promise<void> {
    const own = events.find((e) => e.type === "m.room.member" && e.state_key === this.bot.userId && memberContentSchema.safeParse(e.content).data?.membership === "invite");
    if (!own) return;
    const inviter = own.sender;
    if (!this.mayJoin(inviter)) {
      this.ctx.log.info({ roomId, inviter, autoJoin: this.ctx.settings.autoJoin }, "a room invite was not accepted (channels.matrix.autoJoin)");
      return;
    }
    try {
      await this.api.join(roomId);
      this.ctx.log.info({ roomId, inviter }, "joined a room on invite");
    } catch (err) {
      if (transient(err)) throw err;
      this.ctx.log.warn({ err: (err as Error).message, roomId }, "the homeserver refused the join");
    }
  }

  /** One joined room of a batch; returns its last timeline event id (undefined: the bot left it). */
  private async room(roomId: string, room: JoinedRoom, since: string | undefined): Promise<string | undefined> {
    const initial = since === undefined;
    const state = parseEvents(room.state);
    let timeline = parseEvents(room.timeline);
    if (!initial && room.timeline?.limited) {
      const gap = await this.catchUp(roomId, room.timeline.prev_batch, since);
      const inTimeline = new Set(timeline.map((e) => e.event_id));
      timeline = [...gap.filter((e) => !e.event_id || !inTimeline.has(e.event_id)), ...timeline];
    }
    const count = room.summary?.["m.joined_member_count"];
    if (count !== undefined) await this.state.updateRoom(roomId, { members: count });
    let encryptionSeen = false;
    for (const ev of [...state, ...timeline]) {
      if (ev.type === "m.room.member" && ev.state_key) {
        const member = memberContentSchema.safeParse(ev.content);
        if (!member.success) continue;
        const gone = member.data.membership === "leave" || member.data.membership === "ban";
        if (gone) this.names.forget(roomId, ev.state_key);
        else if (member.data.displayname) this.names.set(roomId, ev.state_key, member.data.displayname);
        if (ev.state_key === this.bot.userId && gone) {
          this.names.forget(roomId);
          await this.state.forgetRoom(roomId);
          return undefined;
        }
        // a member came or went without a new count: counted again when a message needs it
        if (count === undefined && timeline.includes(ev)) await this.state.updateRoom(roomId, { members: undefined });
      }
      if (ev.type === "m.room.encryption" && ev.state_key === "") {
        encryptionSeen = true;
        await this.encrypted(roomId, "m.room.encryption");
      } else if (ev.type === "m.room.encrypted" && ev.sender !== this.bot.userId) {
        await this.encryptedEvent(roomId);
      }
    }
    // the initial sync holds the room's whole state: no m.room.encryption there, not encrypted
    if (initial && !encryptionSeen && this.state.room(roomId).encrypted === undefined) await this.state.updateRoom(roomId, { encrypted: false });
    const last = timeline.findLast((e) => e.event_id)?.event_id ?? this.state.room(roomId).lastEventId;
    if (initial) return last;
    for (const ev of timeline) {
      const message = ev.type === "m.room.message";
      if ((!message && ev.type !== "m.reaction" && ev.type !== "m.room.redaction") || (message && ev.sender === this.bot.userId)) continue;
      if (this.state.room(roomId).encrypted) {
        this.ctx.log.debug({ roomId, eventId: ev.event_id, type: ev.type }, "an event in an encrypted room is not taken");
        continue;
      }
      if (message) await this.message(roomId, ev);
      else await takeReaction(this.reactions, roomId, ev);
    }
    return last;
  }

  /** The events of a limited timeline's gap, oldest first (capped at catchUpMax, with a warning). */
  private async catchUp(roomId: string, prevBatch: string | undefined, since: string): Promise<RoomEvent[]> {
    const { log, settings } = this.ctx;
    if (!prevBatch) {
      log.warn({ roomId }, "a limited /sync timeline without prev_batch: the room's older messages of the gap cannot be fetched");
      return [];
    }
    try {
      const gap = await fetchGap(this.api, { roomId, from: prevBatch, to: since, stopAt: this.state.room(roomId).lastEventId, max: settings.catchUpMax, filter: GAP_FILTER, signal: this.ctx.rt.signal });
      if (gap.skipped) {
        log.warn({ roomId, taken: gap.events.length, catchUpMax: settings.catchUpMax }, "more events came into the room during a sync gap than channels.matrix.catchUpMax: the older ones were skipped");
      } else if (gap.events.length) {
        log.info({ roomId, events: gap.events.length, pages: gap.pages }, "caught up with a sync gap (/messages)");
      }
      return gap.events;
    } catch (err) {
      if (transient(err)) throw err;
      log.warn({ err: (err as Error).message, roomId }, "could not fetch a sync gap's older messages (/messages): they are skipped");
      return [];
    }
  }

  /** An m.room.encrypted event: the room's state decides (a member can send one into a room without encryption). */
  private async encryptedEvent(roomId: string): Promise<void> {
    let encrypted: boolean;
    try {
      encrypted = await this.gate.isEncrypted(roomId, this.ctx.rt.signal);
    } catch (err) {
      if (transient(err)) throw err;
      this.ctx.log.warn({ err: (err as Error).message, roomId }, "could not check the room's encryption state; the encrypted event is ignored");
      return;
    }
    if (encrypted) return this.encrypted(roomId, "m.room.encrypted, the room's state has m.room.encryption");
    if (!this.strayEncrypted.has(roomId)) {
      this.strayEncrypted.add(roomId);
      this.ctx.log.info({ roomId }, "an m.room.encrypted event in a room without encryption (m.room.encryption): ignored; the room is still answered");
    }
  }

  /** The room is encrypted: its one notice (once per room) and a warning. */
  private async encrypted(roomId: string, why: string): Promise<void> {
    const info = await this.state.updateRoom(roomId, { encrypted: true });
    if (info.noticeAt) return;
    this.ctx.log.warn({ roomId, why }, "the bot is in an end-to-end encrypted room: it cannot read it (not supported); telling the room once");
    const wait = this.lastNoticeAt + NOTICE_GAP_MS - Date.now();
    if (wait > 0) await sleepUnlessAborted(wait, this.ctx.rt.signal);
    this.lastNoticeAt = Date.now();
    try {
      await this.api.send(roomId, txnIdFor(`encrypted-notice:${roomId}`, 0), textContent(ENCRYPTED_NOTICE, { notice: true }));
    } catch (err) {
      if (transient(err)) throw err;
      this.ctx.log.warn({ err: (err as Error).message, roomId }, "could not send the encryption notice");
    }
    await this.state.updateRoom(roomId, { noticeAt: Date.now() });
  }

  private async isDirect(roomId: string): Promise<boolean> {
    if (this.state.direct.has(roomId)) return true;
    let members = this.state.room(roomId).members;
    if (members === undefined) {
      try {
        members = (await this.api.joinedMembers(roomId)).size;
      } catch (err) {
        if (transient(err)) throw err;
        this.ctx.log.warn({ err: (err as Error).message, roomId }, "could not count the room's members; taking it as a group");
        return false;
      }
      await this.state.updateRoom(roomId, { members });
    }
    return members === 2;
  }

  private async message(roomId: string, ev: RoomEvent): Promise<void> {
    const mapped = eventToInbound(ev, roomId, await this.isDirect(roomId), this.bot, this.names.get(roomId, ev.sender), { threads: this.ctx.settings.threads });
    if (!mapped) return;
    const { inbound, files } = mapped;
    if (files.length) inbound.attachments = await storeFiles(this.ctx, this.api, files);
    const watch = inbound.mentioned && this.ctx.settings.typingIndicator ? this.typing.watch(this.ctx.runIdFor(inbound.id), roomId) : undefined;
    try {
      await publishWatched(this.ctx, inbound, watch, WATCH_MAX_MS);
    } catch (err) {
      watch?.stop();
      if (isUnstorable(err)) {
        this.ctx.log.warn({ err, eventId: inbound.id }, "a Matrix message cannot be stored; skipped");
        return;
      }
      throw err;
    }
  }
}
