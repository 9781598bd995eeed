/**
 * Files of the Matrix channel, through the media store (shared/runtime/channel/media.ts):
 *  - in: each file of a message (its mxc:// URI) is downloaded from the homeserver (the
 *    authenticated media endpoint, else the legacy one: api.ts) into the store before the message
 *    is published; the message carries the ref, or `error` when the file is above media.maxFileMb
 *    (the size the event announces is checked first: not downloaded) or the download failed. A
 *    media store that is down throws (the /sync batch is taken again: the file is not lost);
 *  - out: an attachment part is loaded from the store, uploaded (`/_matrix/media/v3/upload`) and
 *    sent as m.image / m.audio / m.video / m.file (in the reply's thread, when it goes to one); a
 *    file the store cannot give for good is sent as the fallback text instead.
 */
import type { Attachment } from "../../shared/contract/index.js";
import { outboundFileOrFallback, storeInboundFile, type ChannelContext } from "../../shared/runtime/channel/index.js";
import type { MatrixChannelConfig } from "../../shared/runtime/config-channels.js";
import type { MatrixApi } from "./api.js";
import type { MatrixFile } from "./inbound.js";
import { fileContent, textContent, toDeliveryError, type Relation } from "./send.js";

type Ctx = ChannelContext<MatrixChannelConfig>;

/** The message's files, stored (a file that fails has `error`; a store that is down throws). */
export function storeFiles(ctx: Ctx, api: MatrixApi, files: MatrixFile[]): Promise<Attachment[]> {
  return Promise.all(files.map((f) => storeInboundFile(ctx.rt.media, { kind: f.kind, mime: f.mime, name: f.name, size: f.size }, (maxBytes, signal) => api.download(f.mxc, maxBytes, signal), ctx.log, { retryUnavailable: true })));
}

/** Uploads one attachment and sends its message (or the fallback text) with `txnId` and `relation` (a reply, a thread); returns the event id. */
export async function sendAttachment(ctx: Ctx, api: MatrixApi, roomId: string, a: Attachment, txnId: string, relation: Relation, signal: AbortSignal): Promise<string> {
  const loaded = await outboundFileOrFallback(ctx.rt.media, a, ctx.log);
  try {
    if ("fallback" in loaded) return await api.send(roomId, txnId, textContent(loaded.fallback, relation), signal);
    const mxc = await api.upload(loaded.file.bytes, loaded.file.mime, loaded.file.name, signal);
    return await api.send(roomId, txnId, fileContent(loaded.file, mxc, relation), signal);
  } catch (err) {
    throw toDeliveryError(err);
  }
}
