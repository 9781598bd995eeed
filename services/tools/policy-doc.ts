/**
 * The policy's tables as Markdown, generated from the code (shared/runtime/tool-policy.ts, registry.ts) so the docs
 * cannot drift: services/tools/README.md holds this text between the `policy-tables` markers,
 * and test/tools-policy.test.ts fails when it differs. Print it with
 * `node dist/services/tools/policy-doc.js`.
 */
import { pathToFileURL } from "node:url";
import { decideTool, type ToolProfile, GROUP_DENY_LIST, GROUP_SESSION_TYPES, normalizeGroup, SANDBOX_DENY_LIST, SUBAGENT_DENY_LIST, TOOL_GROUPS, TOOL_PROFILES } from "../../shared/runtime/tool-policy.js";
import { BUILTIN_TOOLS } from "./registry.js";
import { compareCodeUnits } from "../../shared/runtime/order.js";

const code = (names: readonly string[]) => names.map((n) => `\`${n}\``).join(", ");

/** A name as the docs show it: built-in tools plain, names of tools not built here marked. */
function shown(name: string): string {
  const builtin = BUILTIN_TOOLS.some((t) => t.name === name || (t.aliases ?? []).includes(name));
  return builtin ? `\`${name}\`` : `\`${name}\`*`;
}

export function policyTablesMarkdown(): string {
  const groups = new Map<string, Set<string>>();
  for (const [group, members] of Object.entries(TOOL_GROUPS)) groups.set(group, new Set(members));
  for (const tool of BUILTIN_TOOLS) {
    for (const g of tool.groups) {
      const group = normalizeGroup(g);
      if (!groups.has(group)) groups.set(group, new Set());
      groups.get(group)!.add(tool.name);
    }
  }
  const lines = [
    "| profile | allow list (`*` = everything) | built-in tools it gives in a main session |",
    "|---|---|---|",
    ...Object.entries(TOOL_PROFILES).map(([name, rules]) => {
      const given = BUILTIN_TOOLS.filter((t) => decideTool(t, { profile: name as ToolProfile, sessionType: "main" }).allowed).map((t) => t.name);
      return `| \`${name}\` | ${code(rules.allow ?? [])} | ${code(given)} |`;
    }),
    "",
    "| group | members |",
    "|---|---|",
    ...[...groups.entries()].sort(([a], [b]) => compareCodeUnits(a, b)).map(([group, members]) => `| \`${group}\` | ${[...members].map(shown).join(", ")} |`),
    "",
    "| built-in deny list | applies to | tools |",
    "|---|---|---|",
    `| session layer | ${code(GROUP_SESSION_TYPES)} sessions | ${[...GROUP_DENY_LIST].map(shown).join(", ")} |`,
    `| sandbox layer | \`tools.sandboxedSessions\` | ${[...SANDBOX_DENY_LIST].map(shown).join(", ")} |`,
    `| subagent layer | \`subagent\` sessions | ${[...SUBAGENT_DENY_LIST].map(shown).join(", ")} |`,
    "",
    "\\* not a built-in tool (a name from the seeds' tables, for tools other actors may serve).",
  ];
  return lines.join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.stdout.write(`${policyTablesMarkdown()}\n`);
