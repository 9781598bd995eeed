/**
 * The browser <-> channel-web WebSocket protocol (JSON text frames, one object each).
 * Browser -> server: `hello` (the token; must come first), `open` (show a chat: its kept
 * entries after `since` come back as `history`), `send` (a message with a browser-made UUID and
 * at most MAX_FILES_PER_MESSAGE files, by the refs `POST /upload` answered: answered `ack` once
 * stored in LURK_INBOUND, or `nack`), `canvas_action` (a Button pressed on the canvas: an A2UI
 * userAction, sent on as a message of the chat; answered like `send`), `react` (the user adds or
 * removes an emoji on a line of the chat, by its seq: answered `reacted`, the line's `update` goes
 * to the chat's pages), `sessions`, `ping`.
 * Server -> browser: `ready` (the signed-in user's id and name, the upload cap), `history`, `entry` (a stored chat line: the
 * user's message, a reply, a file, a notice, an error or an approval), `update` (a kept line
 * changed: the assistant's reaction, edit or deletion), `delta` (streamed reply
 * text), `tool` (tool progress), `run_end`, `typing`, `canvas` (the chat's canvas, after `open`
 * and on every change; null when there is none), `sessions`, `ack`/`nack`, `reacted`, `error`, `pong`.
 * A chat id is token-safe (`[A-Za-z0-9_-]`, <= 64) and names one of the signed-in user's
 * chats; its conversation and session name on the bus come from user-scope.ts.
 */
import { z } from "zod";
import { mediaRefSchema, type Attachment } from "../../shared/contract/index.js";
import type { ReactionOutcome } from "../../shared/runtime/channel/index.js";
import { a2uiIdSchema } from "./a2ui-schema.js";
import type { CanvasView } from "./canvas-state.js";

export const CHAT_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** the chat that follows routing.dmScope (no session name): the main session by default */
export const MAIN_CHAT = "main";
export const chatIdSchema = z.string().regex(CHAT_ID, "a chat id is 1-64 letters, digits, _ or -");
export const MAX_FILES_PER_MESSAGE = 8;

const messageIdSchema = z.string().regex(/^[A-Za-z0-9-]{8,64}$/, "the message id is a UUID");

const sendFrameSchema = z.object({
  type: z.literal("send"),
  id: messageIdSchema,
  chat: chatIdSchema,
  text: z.string().max(100_000).default(""),
  /** files uploaded before (POST /upload), by ref only: their name, type and size are the channel's record */
  attachments: z.array(z.object({ ref: mediaRefSchema }).strict()).max(MAX_FILES_PER_MESSAGE).default([]),
}).refine((f) => f.text.length > 0 || f.attachments.length > 0, { message: "a message needs text or a file", path: ["text"] });

/** the JSON of a userAction's context at most (the message the agent gets carries its first ACTION_CONTEXT_CHARS) */
export const ACTION_CONTEXT_MAX_BYTES = 32 * 1024;
/** An A2UI userAction: the Button's action name, the button, its surface, and its context resolved by the page. */
const canvasActionFrameSchema = z.object({
  type: z.literal("canvas_action"),
  id: messageIdSchema,
  chat: chatIdSchema,
  surfaceId: a2uiIdSchema,
  sourceComponentId: a2uiIdSchema,
  name: z.string().min(1).max(100),
  /** the action's context keys (at most 32, as an action declares) with JSON values: a literal, or what the path held on the page (a typed text, a number, a selections array, a map) */
  context: z.record(z.string().min(1).max(64), z.json()).default({})
    .refine((c) => Object.keys(c).length <= 32, { message: "a context has at most 32 keys" })
    .refine((c) => Buffer.byteLength(JSON.stringify(c)) <= ACTION_CONTEXT_MAX_BYTES, { message: `a context is at most ${ACTION_CONTEXT_MAX_BYTES} bytes of JSON` }),
});

/** an emoji of a user's reaction is at most this many UTF-16 code units (a ZWJ family, a flag, a skin tone fit) */
const MAX_EMOJI_UNITS = 32;
/** distinct reactions one user keeps on one line at most */
export const MAX_USER_REACTIONS = 12;
/** one emoji (or a short sequence of them): pictographs, flags, keycaps, skin tones, ZWJ and VS16 only, no text */
const emojiSchema = z.string().min(1)
  .refine((e) => e.length <= MAX_EMOJI_UNITS, { message: `an emoji is at most ${MAX_EMOJI_UNITS} UTF-16 code units`, abort: true })
  .regex(/^[\p{Extended_Pictographic}\p{Emoji_Component}\u20e3\ufe0f\u200d]+$/u, "an emoji only (no letters, spaces or markup)")
  .refine((e) => /[\p{Extended_Pictographic}\p{Regional_Indicator}]/u.test(e), { message: "an emoji only (digits and marks alone are not one)" });
/** The user adds (or, `remove`, takes back) an emoji on the kept line `seq` of one of their chats. */
const reactFrameSchema = z.object({
  type: z.literal("react"),
  chat: chatIdSchema,
  seq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  emoji: emojiSchema,
  remove: z.boolean().default(false),
}).strict();

export const clientFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("hello"), token: z.string().max(600) }),
  z.object({ type: z.literal("open"), chat: chatIdSchema, since: z.number().int().nonnegative().default(0) }),
  sendFrameSchema,
  canvasActionFrameSchema,
  reactFrameSchema,
  z.object({ type: z.literal("sessions") }),
  z.object({ type: z.literal("ping") }),
]);
export type ClientFrame = z.infer<typeof clientFrameSchema>;
export type SendFrame = z.infer<typeof sendFrameSchema>;
export type CanvasActionFrame = z.infer<typeof canvasActionFrameSchema>;
export type ReactFrame = z.infer<typeof reactFrameSchema>;
/** what became of a `react`: "unchanged" (the same add twice, or a remove of none: no event), else the kit's outcome ("ignored": reactionNotifications drops it) */
export type ReactOutcome = "unchanged" | ReactionOutcome;

/** A file in a chat line: in the media store under `ref`, downloadable at `GET /media/<ref>`. */
export interface WebFile {
  ref: string;
  name: string;
  mime: string;
  size: number;
  kind: Attachment["kind"];
}

/** One kept line of a chat (history.ts), in order of `seq`. */
export interface ChatEntry {
  seq: number;
  ts: number;
  role: "user" | "assistant";
  kind: "message" | "reply" | "notice" | "error" | "approval";
  /** the inbound message id (user) or `<deliveryId>:<part>` (assistant) */
  id: string;
  text: string;
  runId?: string;
  approval?: { approvalId: string; tool: string; command?: string; expiresAt: number };
  /** the files of the line (a user's message; an agent's file is a line of its own with empty text) */
  attachments?: WebFile[];
  /** the assistant's reactions on the line (the message tool's react) */
  reactions?: string[];
  /** the user's reactions on the line (the page's picker: a `react` frame), oldest first */
  userReactions?: string[];
  /** how many times the user's reactions changed (names each change's event: reactions.ts) */
  reactionRev?: number;
  /** the assistant changed its text (the message tool's edit) */
  edited?: boolean;
  /** the assistant deleted it (text and files gone; the page drops the line) */
  deleted?: boolean;
}

export interface WebSession { chat: string; sessionKey: string; updatedAt: number; records: number; label?: string; active: boolean }

export type ServerFrame =
  | { type: "ready"; userId: string; name: string; maxFileBytes: number }
  | { type: "history"; chat: string; entries: ChatEntry[] }
  | { type: "entry"; chat: string; entry: ChatEntry }
  /** a kept line changed (reaction, edit, deletion): the page redraws the line with that `id` */
  | { type: "update"; chat: string; entry: ChatEntry }
  | { type: "delta"; chat: string; runId: string; text: string }
  | { type: "tool"; chat: string; runId: string; toolCallId: string; name: string; phase: "start" | "end"; isError?: boolean; durationMs?: number; detail?: string }
  | { type: "run_end"; chat: string; runId: string; status: "done" | "error"; code?: string; message?: string }
  | { type: "typing"; chat: string }
  | { type: "canvas"; chat: string; canvas: CanvasView | null }
  | { type: "sessions"; sessions: WebSession[] }
  | { type: "ack"; id: string; chat: string; runId: string; duplicate: boolean }
  | { type: "nack"; id: string; chat: string; code: string; message: string }
  | { type: "reacted"; chat: string; seq: number; emoji: string; remove: boolean; outcome: ReactOutcome }
  /** `about`: the frame type refused ("react"), when the error answers one */
  | { type: "error"; code: string; message: string; about?: "react" }
  | { type: "pong" };
