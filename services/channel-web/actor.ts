/**
 * channel-web: the browser chat (node:http + ws, loopback by default, one token) on the
 * channel kit. In: socket `send` frames -> LURK_INBOUND (hub.ts), acked after storing.
 * Out: the kit's durable deliveries. Each delivered part (a text, or one file: files.ts) is
 * written to the chat's history (LMDB, history.ts) and then pushed to the chat's open
 * sockets; a browser that is closed or reconnecting gets it when it (re)opens the chat (it asks
 * for the entries after the last seq it saw). So a delivery succeeds once stored: nothing is retried for an absent browser, and
 * nothing is lost to it. Streaming (delta) and tool progress come from the run's events.
 */
import { join } from "node:path";
import { defineChannelActor, DeliveryError } from "../../shared/runtime/channel/index.js";
import { webChannelSchema } from "../../shared/runtime/config-channels.js";
import { outboundFile, WebFiles } from "./files.js";
import { ChatHistory } from "./history.js";
import { Hub } from "./hub.js";
import { CHAT_ID } from "./protocol.js";
import { startWebServer } from "./server.js";

/** a part of a longer reply is its own chat line above this size */
export const WEB_TEXT_LIMIT = 100_000;

export const definition = defineChannelActor({
  channel: "web",
  description: "browser chat (HTTP + WebSocket)",
  schema: webChannelSchema,
  metadata: (s) => ({ listen: `${s.host}:${s.port}` }),
  async start(ctx) {
    const { settings, log } = ctx;
    const token = ctx.secret("token", settings.token);
    const history = new ChatHistory(join(ctx.dataDir, "history"), settings.historyPerChat);
    const files = new WebFiles(join(ctx.dataDir, "files"), ctx.config.media.retentionDays);
    const hub = new Hub(ctx, history, files);
    const web = await startWebServer(ctx, token, hub, files);
    log.info({ host: settings.host, port: web.port, url: `http://${settings.host}:${web.port}/` }, "web channel listening (open the page with ?token=<channels.web.token>)");
    return {
      textLimit: WEB_TEXT_LIMIT,
      async deliver(part) {
        const msg = part.message;
        const chat = msg.conversation;
        if (!CHAT_ID.test(chat)) throw new DeliveryError(`"${chat}" is not a web chat id`, { permanent: true });
        const kind = msg.kind === "typing" ? "notice" : msg.kind;
        // an attachment part: a line with the file (or, when it cannot be read, a text line saying so)
        const got = part.attachments[0] ? await outboundFile(ctx.rt.media, files, part.attachments[0], ctx.log) : undefined;
        const entry = await hub.record(chat, {
          ts: Date.now(),
          role: "assistant",
          kind,
          id: `${msg.id}:${part.index}`,
          text: got && "fallback" in got ? got.fallback : part.text,
          ...(got && "file" in got ? { attachments: [got.file] } : {}),
          ...(msg.runId ? { runId: msg.runId } : {}),
          ...(msg.kind === "approval" && msg.approval ? { approval: msg.approval } : {}),
        });
        return { platformMessageId: `${chat}:${entry.seq}` };
      },
      async typing(msg) {
        if (CHAT_ID.test(msg.conversation)) hub.broadcast(msg.conversation, { type: "typing", chat: msg.conversation });
      },
      async stop() {
        hub.stop();
        await web.close();
        await history.close();
        await files.close();
      },
    };
  },
});
