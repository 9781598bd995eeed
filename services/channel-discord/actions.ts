/**
 * The `message` tool's actions on Discord (the kit resolved and checked them: actions.ts): react
 * with PUT (remove: DELETE) /channels/{channel}/messages/{message}/reactions/{emoji}/@me, edit with
 * PATCH and delete with DELETE /channels/{channel}/messages/{message}. A message id is Discord's
 * (a snowflake) in the conversation's channel; a slash command is no message to react to.
 */
import { Routes } from "discord-api-types/v10";
import type { REST } from "@discordjs/rest";
import { DeliveryError, toDiscordMarkdown, type ActionRequest, type DeliveryContext } from "../../shared/runtime/channel/index.js";
import { toDeliveryError, type DiscordApi } from "./send.js";

export const DISCORD_ACTIONS = ["react", "edit", "delete"] as const;

function snowflake(id: string): string {
  if (!/^\d{5,25}$/.test(id)) throw new DeliveryError(`"${id}" is not a Discord message id${id.includes(":") ? " (a slash command is no message to react to)" : ""}`, { permanent: true });
  return id;
}

export async function discordAct(rest: REST, api: DiscordApi, req: ActionRequest, ctx: DeliveryContext): Promise<void> {
  const channelId = req.message.conversation;
  if (req.op === "edit") return api.edit(channelId, snowflake(req.platformMessageId), toDiscordMarkdown(req.text), ctx.signal);
  try {
    if (req.op === "react") {
      const route = Routes.channelMessageOwnReaction(channelId, snowflake(req.platformMessageId), encodeURIComponent(req.emoji));
      if (req.remove) await rest.delete(route, { signal: ctx.signal });
      else await rest.put(route, { signal: ctx.signal });
    } else {
      for (const id of req.platformMessageIds) await api.remove(channelId, snowflake(id));
    }
  } catch (err) {
    throw toDeliveryError(err);
  }
}
