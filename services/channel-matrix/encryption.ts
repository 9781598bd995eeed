/**
 * Whether a room is end-to-end encrypted, for everything the channel sends (replies, files,
 * typing): a room is encrypted only by its `m.room.encryption` state event (the sync marks it,
 * batch.ts), never by an `m.room.encrypted` message, which any member can send into any room.
 * A room the channel knows nothing about (a cron delivery to a room not seen since the record was
 * made, one joined while the record was lost) is asked from the homeserver once,
 * `GET /rooms/{roomId}/state/m.room.encryption` (404: not encrypted), and the answer kept in the
 * room record (LMDB); a room turning encrypted later is marked by the sync's state event.
 * Nothing is ever sent into an encrypted room but the one notice (batch.ts): the answer would go
 * there unencrypted, into a room its members think is private.
 */
import { DeliveryError } from "../../shared/runtime/channel/index.js";
import type { MatrixApi } from "./api.js";
import type { MatrixState } from "./rooms.js";
import { toDeliveryError } from "./send.js";

export class EncryptionGate {
  /** one state lookup per room at a time */
  private readonly pending = new Map<string, Promise<boolean>>();

  constructor(private readonly api: MatrixApi, private readonly state: MatrixState) {}

  /** The room's encryption: the record's, else the homeserver's (kept); homeserver errors throw (MatrixError). */
  async isEncrypted(roomId: string, signal?: AbortSignal): Promise<boolean> {
    const known = this.state.room(roomId).encrypted;
    if (known !== undefined) return known;
    let lookup = this.pending.get(roomId);
    if (!lookup) {
      lookup = (async () => {
        const encrypted = await this.api.roomEncrypted(roomId, signal);
        // the sync may have marked it meanwhile: encrypted wins
        if (this.state.room(roomId).encrypted === undefined) await this.state.updateRoom(roomId, { encrypted });
        return this.state.room(roomId).encrypted ?? encrypted;
      })().finally(() => this.pending.delete(roomId));
      this.pending.set(roomId, lookup);
    }
    return lookup;
  }

  /** Throws a permanent DeliveryError when nothing may be sent into the room (homeserver errors as DeliveryErrors). */
  async assertSendable(roomId: string, what: string, signal?: AbortSignal): Promise<void> {
    let encrypted: boolean;
    try {
      encrypted = await this.isEncrypted(roomId, signal);
    } catch (err) {
      throw toDeliveryError(err);
    }
    if (encrypted) {
      throw new DeliveryError(`not sent: ${roomId} is an end-to-end encrypted room and this channel cannot encrypt (the ${what} would go there unencrypted)`, { permanent: true });
    }
  }
}
