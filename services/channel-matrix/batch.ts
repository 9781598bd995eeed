/**
 * One /sync batch, in order: `m.direct` (which rooms are DMs), invites (joined as `autoJoin`
 * says), then each joined room: its membership and encryption state, then its timeline's
 * messages, each stored in LURK_INBOUND with its files (inbound.ts, files.ts) while typing shows
 * during its run. Encrypted rooms are not read: the first time the channel sees one (an
 * `m.room.encryption` state event, or an `m.room.encrypted` event) it sends one plain notice
 * there (once per room, kept in LMDB; notices at least NOTICE_GAP_MS apart) and logs a warning;
 * nothing is answered in such a room, not even a plain message (the answer would go there
 * unencrypted). The initial sync of a fresh install takes rooms and invites, no messages.
 * A step that may succeed later (bus or homeserver unreachable) throws: the loop takes the
 * batch again; what can never succeed (a join the homeserver refuses, an unstorable message) is
 * logged and skipped.
 */
import { LurkError } from "../../shared/contract/index.js";
import { dmRules, listMatches } from "../../shared/runtime/access-policy.js";
import { publishWatched, type ChannelContext } from "../../shared/runtime/channel/index.js";
import type { MatrixChannelConfig } from "../../shared/runtime/config-channels.js";
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import { MatrixError, type MatrixApi } from "./api.js";
import { storeFiles } from "./files.js";
import { eventToInbound, type BotIdentity } from "./inbound.js";
import type { MatrixState } from "./rooms.js";
import { textContent, txnIdFor } from "./send.js";
import { Typing } from "./typing.js";
import { directContentSchema, memberContentSchema, roomEventSchema, type JoinedRoom, type RoomEvent, type SyncResponse } from "./wire.js";

type Ctx = ChannelContext<MatrixChannelConfig>;

export const ENCRYPTED_NOTICE = "I can't read encrypted messages: this assistant does not support Matrix end-to-end encryption, so I will not answer in this room. "
  + "To talk to me, start a direct chat or room with encryption turned off (Element: turn off \"Enable end-to-end encryption\" when creating it) and invite me there; encryption cannot be turned off in an existing room.";
const NOTICE_GAP_MS = 1_000;
/** errors after which a message can never be stored: logged and skipped */
const UNSTORABLE = new Set(["VALIDATION_FAILED", "PAYLOAD_TOO_LARGE"]);
const WATCH_MAX_MS = 30 * 60_000;

const parseEvents = (list: { events?: unknown[] } | undefined): RoomEvent[] =>
  (list?.events ?? []).flatMap((e) => { const p = roomEventSchema.safeParse(e); return p.success ? [p.data] : []; });

/** A homeserver answer that another try may change (unreachable, 5xx, 429). */
const transient = (err: unknown) => err instanceof MatrixError && (err.status === 0 || err.status === 429 || err.status >= 500);

export class BatchHandler {
  private lastNoticeAt = 0;
  /** display names seen in member events: `<roomId> <userId>` -> name */
  private readonly names = new Map<string, string>();

  constructor(private readonly ctx: Ctx, private readonly api: MatrixApi, private readonly state: MatrixState, private readonly bot: BotIdentity, private readonly typing: Typing) {}

  async handle(batch: SyncResponse, initial: boolean): Promise<void> {
    for (const ev of parseEvents(batch.account_data)) {
      if (ev.type !== "m.direct") continue;
      const direct = directContentSchema.safeParse(ev.content);
      if (direct.success) await this.state.setDirect(Object.values(direct.data).flat());
    }
    for (const [roomId, room] of Object.entries(batch.rooms?.invite ?? {})) await this.invite(roomId, parseEvents(room.invite_state));
    for (const roomId of Object.keys(batch.rooms?.leave ?? {})) await this.state.forgetRoom(roomId);
    for (const [roomId, room] of Object.entries(batch.rooms?.join ?? {})) await this.room(roomId, room, initial);
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

  private async room(roomId: string, room: JoinedRoom, initial: boolean): Promise<void> {
    const state = parseEvents(room.state);
    const timeline = parseEvents(room.timeline);
    const count = room.summary?.["m.joined_member_count"];
    if (count !== undefined) await this.state.updateRoom(roomId, { members: count });
    for (const ev of [...state, ...timeline]) {
      if (ev.type === "m.room.member" && ev.state_key) {
        const member = memberContentSchema.safeParse(ev.content);
        if (!member.success) continue;
        if (member.data.displayname) this.names.set(`${roomId} ${ev.state_key}`, member.data.displayname);
        if (ev.state_key === this.bot.userId && (member.data.membership === "leave" || member.data.membership === "ban")) return this.state.forgetRoom(roomId);
        // a member came or went without a new count: counted again when a message needs it
        if (count === undefined && timeline.includes(ev)) await this.state.updateRoom(roomId, { members: undefined });
      }
      if (ev.type === "m.room.encryption" || (ev.type === "m.room.encrypted" && ev.sender !== this.bot.userId)) await this.encrypted(roomId, ev.type);
    }
    if (initial) return;
    for (const ev of timeline) {
      if (ev.type !== "m.room.message" || ev.sender === this.bot.userId) continue;
      if (this.state.room(roomId).encrypted) {
        this.ctx.log.debug({ roomId, eventId: ev.event_id }, "a message in an encrypted room is not answered");
        continue;
      }
      await this.message(roomId, ev);
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
    const mapped = eventToInbound(ev, roomId, await this.isDirect(roomId), this.bot, this.names.get(`${roomId} ${ev.sender}`));
    if (!mapped) return;
    const { inbound, files } = mapped;
    if (files.length) inbound.attachments = await storeFiles(this.ctx, this.api, files);
    const runId = this.ctx.runIdFor(inbound.id);
    const watch = inbound.mentioned && this.ctx.settings.typingIndicator
      ? this.ctx.watchRun(runId, { onEvent: () => this.typing.start(runId, roomId), onEnd: () => this.typing.stop(runId) })
      : undefined;
    try {
      await publishWatched(this.ctx, inbound, watch, WATCH_MAX_MS);
    } catch (err) {
      this.typing.stop(runId);
      if (LurkError.is(err) && UNSTORABLE.has(err.code)) {
        this.ctx.log.warn({ err, eventId: inbound.id }, "a Matrix message cannot be stored; skipped");
        return;
      }
      throw err;
    }
  }
}
