/**
 * The `message` tool's actions on Slack (the kit resolved and checked them: actions.ts): react
 * with reactions.add (remove: reactions.remove), edit with chat.update (mrkdwn), delete with
 * chat.delete. A message id is `<channel>:<ts>` and must be in the conversation's channel.
 * Slack names its emoji: `:thumbsup:` or `thumbsup` is taken as is, a common Unicode emoji is
 * mapped to its name (SLACK_EMOJI), any other is refused with that advice.
 */
import type { WebClient } from "@slack/web-api";
import { DeliveryError, deliveryTarget, toSlackMrkdwn, type ActionRequest, type DeliveryContext } from "../../shared/runtime/channel/index.js";
import { targetOf } from "./inbound.js";
import { toDeliveryError, type SlackApi } from "./send.js";

export const SLACK_ACTIONS = ["react", "edit", "delete"] as const;

/** Unicode emoji -> Slack's name, for the reactions models use most. */
export const SLACK_EMOJI: Record<string, string> = {
  "👍": "+1", "👎": "-1", "❤️": "heart", "❤": "heart", "😂": "joy", "🎉": "tada", "👀": "eyes", "✅": "white_check_mark", "🙏": "pray",
  "🔥": "fire", "😄": "smile", "😊": "blush", "🤔": "thinking_face", "👏": "clap", "🚀": "rocket", "💯": "100", "❌": "x",
  "⚠️": "warning", "😢": "cry", "😮": "open_mouth", "👋": "wave", "✨": "sparkles", "😀": "grinning", "🙌": "raised_hands",
  "💡": "bulb", "📌": "pushpin", "⏳": "hourglass_flowing_sand", "👌": "ok_hand", "🤝": "handshake", "😅": "sweat_smile", "🙂": "slightly_smiling_face",
};

export function slackEmojiName(emoji: string): string {
  const named = /^:?([a-z0-9_+'-]{1,100}):?$/.exec(emoji.trim());
  if (named) return named[1]!;
  const mapped = SLACK_EMOJI[emoji.trim()] ?? SLACK_EMOJI[emoji.trim().replace(/\ufe0f/g, "")];
  if (mapped) return mapped;
  throw new DeliveryError(`Slack reactions take an emoji name: give it as :name: (e.g. :thumbsup:), "${emoji}" has no known name`, { permanent: true });
}

function tsIn(channel: string, platformMessageId: string): string {
  const m = /^([A-Z0-9]+):(\d+\.\d+)$/.exec(platformMessageId);
  if (!m) throw new DeliveryError(`"${platformMessageId}" is not a Slack message id (<channel>:<ts>)`, { permanent: true });
  if (m[1] !== channel) throw new DeliveryError(`message ${platformMessageId} is not in this conversation`, { permanent: true });
  return m[2]!;
}

export async function slackAct(web: WebClient, api: SlackApi, req: ActionRequest, _ctx: DeliveryContext): Promise<void> {
  const channel = deliveryTarget(targetOf, req.message.conversation).channel;
  if (req.op === "edit") return api.update(channel, tsIn(channel, req.platformMessageId), toSlackMrkdwn(req.text));
  if (req.op === "delete") {
    for (const id of req.platformMessageIds) await api.remove(channel, tsIn(channel, id));
    return;
  }
  const args = { channel, timestamp: tsIn(channel, req.platformMessageId), name: slackEmojiName(req.emoji) };
  try {
    if (req.remove) await web.reactions.remove(args);
    else await web.reactions.add(args);
  } catch (err) {
    const code = (err as { data?: { error?: string } }).data?.error;
    // already there / already gone: what was asked for is the state
    if (code === (req.remove ? "no_reaction" : "already_reacted")) return;
    throw toDeliveryError(err);
  }
}
