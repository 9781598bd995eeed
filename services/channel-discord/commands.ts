/**
 * The Discord application (slash) commands of the bot: the generic `/lurk text:<message>`
 * (`slashCommand`) and one per router chat command, named and described from the router's own
 * table (shared/contract/chat-commands.ts COMMAND_HELP: one source, no second copy), each with one
 * optional string option `args` when the command takes any. Registered at start with a bulk
 * overwrite (PUT), globally or in each of `commandGuildIds`; a refusal is logged with what to do
 * and the channel keeps working (commands can still be typed).
 */
import type { REST } from "@discordjs/rest";
import { ApplicationCommandOptionType, ApplicationCommandType, Routes } from "discord-api-types/v10";
import type { Logger } from "../../shared/runtime/logger.js";
import { COMMAND_HELP } from "../../shared/contract/index.js";

/** What Discord takes in a bulk overwrite (a CHAT_INPUT command with string options). */
export interface DcCommand {
  name: string;
  type: ApplicationCommandType.ChatInput;
  description: string;
  options?: { type: ApplicationCommandOptionType.String; name: string; description: string; required: boolean; max_length?: number }[];
}

/** the option of a router command: its arguments, as typed after `/name` */
export const ARGS_OPTION = "args";
/** the option of the generic command: the message */
export const TEXT_OPTION = "text";
const clip = (s: string, max = 100) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * The router's commands from its help table: `"/new, /reset [text]"` gives `new` and `reset`,
 * aliases in parentheses (`(/t)`) are skipped; what follows the names (`[text]`, `:off|low|…`)
 * becomes the `args` option's description.
 */
export function routerCommands(): DcCommand[] {
  const out: DcCommand[] = [];
  for (const [usage, description] of COMMAND_HELP) {
    const parts = usage.replace(/\s*\(\/[^)]*\)/g, "").split(/,\s*/).map((p) => /^\/([a-z][a-z-]*)(.*)$/.exec(p.trim())).filter((m) => m !== null);
    const args = parts.map((m) => m[2]!.replace(/^:/, "").trim()).find(Boolean);
    for (const m of parts) {
      out.push({
        name: m[1]!, type: ApplicationCommandType.ChatInput, description: clip(description),
        ...(args ? { options: [{ type: ApplicationCommandOptionType.String, name: ARGS_OPTION, description: clip(args), required: false }] } : {}),
      });
    }
  }
  return out;
}

/** Every command of the bot: the generic one first, then the router's (one named like the generic is left out). */
export function botCommands(generic: string): DcCommand[] {
  return [
    {
      name: generic, type: ApplicationCommandType.ChatInput, description: "Talk to LurkBot (a /command works too)",
      options: [{ type: ApplicationCommandOptionType.String, name: TEXT_OPTION, description: "your message", required: true, max_length: 6000 }],
    },
    ...routerCommands().filter((c) => c.name !== generic),
  ];
}

/**
 * Bulk-overwrites the application's commands, globally or in each guild; never throws (a
 * refusal is logged with the fix). Resolves with how many scopes took them.
 */
export async function registerCommands(rest: REST, appId: string, settings: { slashCommand: string; commandGuildIds?: string[] | undefined }, log: Logger): Promise<number> {
  const commands = botCommands(settings.slashCommand);
  const scopes = settings.commandGuildIds?.length ? settings.commandGuildIds : [undefined];
  let done = 0;
  for (const guildId of scopes) {
    try {
      await rest.put(guildId ? Routes.applicationGuildCommands(appId, guildId) : Routes.applicationCommands(appId), { body: commands });
      done++;
      log.info({ commands: commands.length, ...(guildId ? { guildId } : { scope: "global" }) }, "registered the Discord slash commands");
    } catch (err) {
      const status = (err as { status?: number }).status;
      log.warn({ err, status, ...(guildId ? { guildId } : { scope: "global" }) },
        `could not register the Discord slash commands${guildId ? ` in guild ${guildId}` : ""}: invite the bot with the applications.commands scope ` +
        "(Developer Portal > OAuth2 > URL Generator: bot + applications.commands)" +
        (guildId ? " and check that it is a member of that guild (channels.discord.commandGuildIds)" : "") +
        ", or set channels.discord.slashCommands to false; typed commands keep working");
    }
  }
  return done;
}
