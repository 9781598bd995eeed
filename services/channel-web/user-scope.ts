/**
 * The names a user's chats have on the bus and in this channel's stores. The page knows a chat
 * by its id (protocol.ts CHAT_ID); a user of `channels.web.users` (scope = their id) gets every
 * name prefixed with "<id>+" ("+" is in neither a chat id nor a user id, and is a subject-token
 * and session-key character that encodeToken keeps). The single-token user (scope "") keeps
 * today's names.
 *
 * | name | single-token user | user "alice" |
 * | --- | --- | --- |
 * | conversation (`lurk.out.web.<c>`, history key) | `<chat>` | `alice+<chat>` |
 * | session name of chat "main" | none (routing.dmScope decides) | `alice` (`agent:<a>:web:dm:alice`, the dmScope "per-channel-peer" key) |
 * | session name of another chat | `<chat>` | `alice+<chat>` |
 * | inbound message id (run id) | the browser's id | `alice+<browser id>` |
 * | a file record | `<ref>` | `alice+<ref>` |
 *
 * So two users never share a conversation, a session, a run or a file record, and a user's
 * "main" chat is never the agent's shared main session.
 */
import { conversationSchema, LurkError, parseSessionKey } from "../../shared/contract/index.js";
import { CHAT_ID, MAIN_CHAT } from "./protocol.js";
import type { WebUser, WebUsers } from "./users.js";

const SEP = "+";

/** A user's chat with its bus name. */
export interface WebChat {
  user: WebUser;
  /** the id the page shows */
  chat: string;
  /** the outbound conversation and history key */
  conversation: string;
}

/** `key` in the user's namespace. */
export function scoped(user: WebUser, key: string): string {
  return user.scope ? `${user.scope}${SEP}${key}` : key;
}

/** The user's chat `chat`; VALIDATION_FAILED when its bus name would be too long (a long user id and a long chat id). */
export function webChat(user: WebUser, chat: string): WebChat {
  const conversation = scoped(user, chat);
  if (!conversationSchema.safeParse(conversation).success) {
    throw new LurkError("VALIDATION_FAILED", `the chat id "${chat}" is too long for this user: at most ${128 - conversation.length + chat.length} characters`);
  }
  return { user, chat, conversation };
}

/** The user and chat a delivery's conversation names; undefined when it is no chat of a configured user. */
export function chatOfConversation(users: WebUsers, conversation: string): WebChat | undefined {
  const at = conversation.indexOf(SEP);
  const [scope, chat] = at < 0 ? ["", conversation] : [conversation.slice(0, at), conversation.slice(at + 1)];
  const user = users.ofScope(scope);
  return user && CHAT_ID.test(chat) ? { user, chat, conversation } : undefined;
}

/** The inbound `sessionName` of a chat (see the table above). */
export function sessionNameOf(c: WebChat): string | undefined {
  if (!c.user.scope) return c.chat === MAIN_CHAT ? undefined : c.chat;
  return c.chat === MAIN_CHAT ? c.user.scope : scoped(c.user, c.chat);
}

/**
 * The chat a session key belongs to, for this user; undefined for anything else (another
 * user's session, another channel's). Single-token user: `agent:<a>:main` -> "main",
 * `agent:<a>:web:dm:<chat>` -> chat; user "alice": `agent:<a>:web:dm:alice` -> "main",
 * `agent:<a>:web:dm:alice+<chat>` -> chat.
 */
export function chatOfSessionKey(key: string, user?: WebUser): string | undefined {
  if (!user?.scope) {
    if (parseSessionKey(key)?.type === "main") return MAIN_CHAT;
    return /^agent:[^:]+:web:dm:([A-Za-z0-9_-]{1,64})$/.exec(key)?.[1];
  }
  const name = /^agent:[^:]+:web:dm:(\S+)$/.exec(key)?.[1];
  if (name === user.scope) return MAIN_CHAT;
  const prefix = `${user.scope}${SEP}`;
  if (!name?.startsWith(prefix)) return undefined;
  const chat = name.slice(prefix.length);
  return CHAT_ID.test(chat) && chat !== MAIN_CHAT ? chat : undefined;
}
