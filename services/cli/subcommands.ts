/** The shared check of `lurkbot <command> <subcommand> [ARG] [--options]` (approvals, cron, pairing, sessions). */
import type { ParsedCommand } from "./args.js";
import { UsageError } from "./errors.js";

export interface SubcommandSpec {
  /** whether the subcommand takes its one argument */
  arg: "none" | "required" | "optional";
  /** the options it accepts (the parser knows every option of the command) */
  options: string[];
}

/**
 * A known subcommand, its argument (`argName` names it when missing, e.g. "a job ID") and only the
 * options it takes; anything else is a UsageError of `command`.
 */
export function checkSubcommand(p: ParsedCommand, command: string, specs: Record<string, SubcommandSpec>, argName: string): { sub: string; arg?: string } {
  const [sub, arg] = p.args;
  const spec = sub ? specs[sub] : undefined;
  const use = (message: string) => new UsageError(message, command);
  if (!sub || !spec) throw use(`${sub ? `unknown subcommand "${sub}"` : "a subcommand is needed"}: lurkbot ${command} ${Object.keys(specs).join("|")}.`);
  if (spec.arg === "required" && arg === undefined) throw use(`\`lurkbot ${command} ${sub}\` needs ${argName} (see \`lurkbot ${command} list\`).`);
  if (spec.arg === "none" && arg !== undefined) throw use(`\`lurkbot ${command} ${sub}\` takes no argument; unexpected "${arg}".`);
  for (const name of Object.keys(p.options)) {
    if (p.options[name] !== undefined && !spec.options.includes(name)) {
      throw use(`--${name} does not apply to \`lurkbot ${command} ${sub}\`${spec.options.length ? ` (it takes ${spec.options.map((o) => `--${o}`).join(", ")})` : ""}.`);
    }
  }
  return { sub, ...(arg !== undefined ? { arg } : {}) };
}
