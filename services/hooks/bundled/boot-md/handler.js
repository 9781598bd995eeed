// boot-md: BOOT.md of the agent's workspace, run by the agent once per start
import { readFile } from "node:fs/promises";
import { join } from "node:path";

const MAX_CHARS = 60_000;

export default async function bootMd(event, ctx) {
  if (event.name !== "gateway:startup") return;
  let text;
  try {
    text = await readFile(join(ctx.workspace, "BOOT.md"), "utf8");
  } catch {
    return; // no BOOT.md: nothing to do
  }
  // headings, HTML comments and blank lines only: nothing to run
  const body = text.replace(/<!--[\s\S]*?-->/g, "").split("\n").filter((l) => l.trim() !== "" && !/^\s*#/.test(l)).join("\n");
  if (body.trim() === "") return;
  if (text.length > MAX_CHARS) ctx.log.warn(`BOOT.md is ${text.length} characters; only the first ${MAX_CHARS} are sent`);
  ctx.runAgent([
    "Startup (BOOT.md): LurkBot just started. Carry out the instructions below from your workspace's BOOT.md, once, now.",
    "To reach someone, use the message tool. When nothing needs saying, answer with NO_REPLY.",
    "",
    text.slice(0, MAX_CHARS),
  ].join("\n"), { sessionKey: event.sessionKey });
  ctx.log.info("BOOT.md sent to the agent");
}
