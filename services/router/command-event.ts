/**
 * `lurk.evt.router.command`: published after a chat command was handled and answered, for
 * monitors and the hooks actor (`command:<name>` hooks). One core publish per command; the data
 * is validated against the contract and its free text capped.
 */
import { routerCommandDataSchema, type InboundMessage, type RouterCommandData } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { CommandResult } from "./command-exec.js";
import type { Command } from "./commands.js";
import type { Route } from "./resolve.js";

const MAX_ARGS_CHARS = 2000;

/** The command's text after its name, as the user meant it. */
export function commandArgs(command: Command): string {
  switch (command.name) {
    case "new":
    case "reset": return command.rest;
    case "compact": return command.instructions;
    case "approve":
    case "deny": return command.id;
    case "subagents": return [command.action, command.target].filter(Boolean).join(" ");
    case "pair": return [command.action, command.code].filter(Boolean).join(" ");
    case "usage": return String(command.days);
    case "settings": return JSON.stringify(command.directives);
    default: return "";
  }
}

/** Never throws: an event that does not fit the contract is logged, the command stays handled. */
export function emitCommandEvent(rt: ActorRuntime, command: Command, msg: InboundMessage, route: Route, result: CommandResult): void {
  const data = routerCommandDataSchema.safeParse({
    command: command.name,
    args: commandArgs(command).slice(0, MAX_ARGS_CHARS),
    ok: result.kind !== "error",
    sessionKey: route.sessionKey,
    agentId: route.agentId,
    channel: msg.channel,
    conversation: msg.conversation,
    ...(msg.accountId ? { accountId: msg.accountId } : {}),
    peer: msg.peer,
    sender: msg.sender,
    messageId: msg.id,
    ...result.sessions,
  } satisfies RouterCommandData);
  if (data.success) rt.emit("command", data.data);
  else rt.log.warn({ command: command.name, issues: data.error.issues.slice(0, 3) }, "the command event does not fit the contract; not published");
}
