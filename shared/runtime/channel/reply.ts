/**
 * What a reply's text asks of the channel (seeds 5.6 and the system prompt's Reply Tags):
 * - silent replies: a text ending with NO_REPLY, or starting with "/NO_REPLY", is never delivered;
 * - reply tags: `[[reply_to_current]]` quotes the message being answered (the last of the
 *   outbound message's `replyTo`), `[[reply_to:<id>]]` a given platform message id. Tags are
 *   removed from the text; the first one wins.
 */
import { isSilentReply, SILENT_REPLY_TOKEN } from "../../contract/index.js";

export { isSilentReply };

/** True while `partial` (a reply being streamed) could still become a silent reply. */
export function mayBecomeSilent(partial: string): boolean {
  const t = partial.trim();
  if (t === "") return true;
  return SILENT_REPLY_TOKEN.startsWith(t) || `/${SILENT_REPLY_TOKEN}`.startsWith(t) || t.startsWith(`/${SILENT_REPLY_TOKEN}`);
}

const TAG = /\[\[\s*(reply_to_current|reply_to\s*:\s*([^\]\s]{1,200}))\s*\]\]/g;

export interface ReplyTags {
  /** the text without tags */
  text: string;
  /** the platform message id to quote, if a tag asked for one */
  replyToMessageId?: string;
}

export function parseReplyTags(text: string, replyTo: readonly string[] = []): ReplyTags {
  let replyToMessageId: string | undefined;
  let found = false;
  const stripped = text.replace(TAG, (_m, tag: string, id: string | undefined) => {
    if (!found) {
      found = true;
      const target = tag === "reply_to_current" ? replyTo[replyTo.length - 1] : id;
      if (target) replyToMessageId = target;
    }
    return "";
  });
  if (!found) return { text };
  const tidy = stripped.replace(/[ \t]+\n/g, "\n").replace(/^[ \t]+|[ \t]+$/g, "").replace(/^\n+/, "");
  return { text: tidy, ...(replyToMessageId ? { replyToMessageId } : {}) };
}
