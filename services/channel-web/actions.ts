/**
 * The `message` tool's actions in the browser chat (the kit resolved and checked them:
 * actions.ts). A line is named by its platform message id: the assistant's `<conversation>:<seq>`
 * (what a delivery returns), or a user's message by its inbound id (the browser's id in the
 * user's namespace). React adds the emoji to the line's `reactions` (remove takes it away), edit
 * replaces an assistant line's text (`edited`), delete empties it (`deleted`); each change is
 * kept in the chat's history and pushed to the open pages as an `update` frame.
 */
import { DeliveryError, type ActionRequest } from "../../shared/runtime/channel/index.js";
import type { Hub } from "./hub.js";
import type { ChatEntry } from "./protocol.js";
import { chatOfConversation, scoped, type WebChat } from "./user-scope.js";
import type { WebUsers } from "./users.js";

export const WEB_ACTIONS = ["react", "edit", "delete"] as const;

function lineOf(hub: Hub, c: WebChat, platformMessageId: string): ChatEntry {
  const prefix = `${c.conversation}:`;
  const seq = platformMessageId.startsWith(prefix) ? Number(platformMessageId.slice(prefix.length)) : NaN;
  const entry = Number.isInteger(seq)
    ? hub.entry(c, seq)
    : hub.findEntry(c, (e) => e.role === "user" && (scoped(c.user, e.id) === platformMessageId || e.id === platformMessageId));
  if (!entry || entry.deleted) throw new DeliveryError(`message ${platformMessageId} is not in this chat (or no longer kept)`, { permanent: true });
  return entry;
}

export async function webAct(hub: Hub, users: WebUsers, req: ActionRequest): Promise<void> {
  const c = chatOfConversation(users, req.message.conversation);
  if (!c) throw new DeliveryError(`"${req.message.conversation}" is not a web chat of a configured user`, { permanent: true });
  // each change applies to the line as stored (the user's reactions may change it meanwhile: reactions.ts)
  const save = async (seq: number, change: (entry: ChatEntry) => ChatEntry) => {
    if (!(await hub.change(c, seq, change))) throw new DeliveryError(`message ${seq} is no longer kept in this chat`, { permanent: true });
  };
  if (req.op === "react") {
    const { seq } = lineOf(hub, c, req.platformMessageId);
    return save(seq, (entry) => {
      const others = (entry.reactions ?? []).filter((r) => r !== req.emoji);
      return { ...entry, reactions: req.remove ? others : [...others, req.emoji].slice(-20) };
    });
  }
  if (req.op === "edit") {
    const entry = lineOf(hub, c, req.platformMessageId);
    if (entry.role !== "assistant") throw new DeliveryError("only the assistant's own lines can be edited", { permanent: true });
    return save(entry.seq, (e) => ({ ...e, text: req.text, edited: true }));
  }
  for (const id of req.platformMessageIds) {
    const { seq } = lineOf(hub, c, id);
    await save(seq, (entry) => {
      const { attachments: _files, userReactions: _mine, ...rest } = entry;
      return { ...rest, text: "", deleted: true };
    });
  }
}
