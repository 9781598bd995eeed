/**
 * What each channel can do with a reply, as its delivery code does it today: the one table the
 * system prompt reads (the Runtime line's `capabilities=`, the Reply Tags section). Contract: a
 * channel that gains or loses one of these changes its row here in the same change;
 * test/prompt.test.ts checks the rows against the kit channels' action lists.
 *   quote-replies: a `[[reply_to_current]]` / `[[reply_to:<id>]]` tag (channel/reply.ts) becomes a
 *                  platform quote or reply (webhook: `replyToMessageId` in its callback);
 *                  every channel on the kit strips the tags, the others just do not quote
 *   files:         attachments the agent sends arrive as files (openai-http: only a note)
 *   voice:         a voice reply is a native voice message (elsewhere it goes as an audio file)
 *   canvas:        the chat has a canvas beside it (the `canvas` tool draws there)
 *   reactions, edit, delete: the `message` tool's actions (channel/actions.ts, the adapter's `actions`)
 * An unknown channel name has none.
 */

export const CHANNEL_CAPABILITY_NAMES = ["quote-replies", "files", "voice", "canvas", "reactions", "edit", "delete"] as const;
export type ChannelCapability = (typeof CHANNEL_CAPABILITY_NAMES)[number];

const ACTIONS = ["reactions", "edit", "delete"] as const;

export const CHANNEL_CAPABILITIES: Readonly<Record<string, readonly ChannelCapability[]>> = {
  cli: ["files"],
  web: ["files", "canvas", ...ACTIONS],
  telegram: ["quote-replies", "files", "voice", ...ACTIONS],
  discord: ["quote-replies", "files", "voice", ...ACTIONS],
  slack: ["files", ...ACTIONS],
  webhook: ["quote-replies", "files"],
  "openai-http": [],
  matrix: ["quote-replies", "files", ...ACTIONS],
  signal: ["quote-replies", "files", ...ACTIONS],
  whatsapp: ["quote-replies", "files", "voice", "reactions"],
};

/** The channel's capabilities in CHANNEL_CAPABILITY_NAMES order; none for an unknown channel. */
export function channelCapabilities(channel: string | undefined): ChannelCapability[] {
  const own = channel !== undefined && Object.hasOwn(CHANNEL_CAPABILITIES, channel) ? CHANNEL_CAPABILITIES[channel]! : [];
  return CHANNEL_CAPABILITY_NAMES.filter((c) => own.includes(c));
}
