// command-logger: one JSON line per command event in $LURKBOT_HOME/logs/commands.log
import { appendFile, mkdir } from "node:fs/promises";
import { join } from "node:path";

export default async function commandLogger(event, ctx) {
  if (event.type !== "command") return;
  const dir = join(ctx.home, "logs");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const line = {
    timestamp: event.timestamp.toISOString(),
    action: event.action,
    sessionKey: event.sessionKey,
    senderId: event.context.senderId,
    source: event.context.channel,
    ok: event.context.ok,
  };
  await appendFile(join(dir, "commands.log"), `${JSON.stringify(line)}\n`, { mode: 0o600 });
}
