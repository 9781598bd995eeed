/**
 * channel-web: the browser chat (node:http + ws, loopback by default; one token, or one per
 * user with `channels.web.users`: users.ts, user-scope.ts) on the channel kit.
 * In: socket `send` frames -> LURK_INBOUND (hub.ts), acked after storing; `react` frames (the
 * user's picker) -> the kit's publishReaction, kept on the line (reactions.ts).
 * Out: the kit's durable deliveries. A delivery's conversation names its user and chat (one that
 * names no configured user's chat fails for good). Each delivered part (a text, or one file:
 * files.ts, remembered for that user) is written to the chat's history (LMDB, history.ts) and
 * then pushed to that user's open sockets showing the chat; a browser that is closed or
 * reconnecting gets it when it (re)opens the chat (it asks for the entries after the last seq it
 * saw). So a delivery succeeds once stored: nothing is retried for an absent browser, and
 * nothing is lost to it. Streaming (delta) and tool progress come from the run's events.
 * The message tool's react/edit/delete change a kept line and push an `update` (actions.ts);
 * tables go out as code blocks (the page's markdown renders none).
 * Canvas: this actor also serves the agent's `canvas` tool (canvas-tool.ts, through
 * shared/runtime/tool-serve.ts in queue group "canvas", policy canvas-policy.ts): each session's
 * canvas is kept in LMDB (canvas-store.ts) and shown next to the chat that session maps to; it
 * is forgotten when the sessions actor resets or deletes the session (canvas-sessions.ts). The
 * canvas needs a single channel-web instance (its state is in this host's LMDB).
 * Tailscale: with `channels.web.tailscale.mode` "serve" or "funnel" the chat is published on the
 * tailnet or the internet once it listens (tailscale.ts; in the background, never failing the
 * start), and turned off again at stop (`resetOnExit`).
 */
import { join } from "node:path";
import { defineChannelActor, DeliveryError } from "../../shared/runtime/channel/index.js";
import { webChannelSchema } from "../../shared/runtime/config-channels.js";
import { serveTools } from "../../shared/runtime/tool-serve.js";
import { canvasPolicy } from "./canvas-policy.js";
import { onSessionEnd } from "./canvas-sessions.js";
import { CanvasStore } from "./canvas-store.js";
import { canvasTool } from "./canvas-tool.js";
import { outboundFile, WebFiles } from "./files.js";
import { ChatHistory } from "./history.js";
import { Hub } from "./hub.js";
import { WEB_ACTIONS, webAct } from "./actions.js";
import { startWebServer } from "./server.js";
import { webTokensOf } from "../../shared/runtime/tailscale-policy.js";
import { exposeWithTailscale } from "./tailscale.js";
import { chatOfConversation, chatOfSessionKey, scoped } from "./user-scope.js";
import { webUsersOf } from "./users.js";

/** a part of a longer reply is its own chat line above this size */
export const WEB_TEXT_LIMIT = 100_000;
/** the queue group of the canvas tool's catalog and calls */
export const CANVAS_QUEUE = "canvas";

export const definition = defineChannelActor({
  channel: "web",
  description: "browser chat (HTTP + WebSocket)",
  schema: webChannelSchema,
  // `tailscale`: "<mode>:<https port>" when publishing is configured (`lurkbot status` shows it)
  metadata: (s) => ({ listen: `${s.host}:${s.port}`, ...(s.tailscale.mode !== "off" ? { tailscale: `${s.tailscale.mode}:${s.tailscale.httpsPort}` } : {}) }),
  async start(ctx) {
    const { settings, log } = ctx;
    // the single token (read or generated once; none with `users`), also checked by the Tailscale rules below
    const singleToken = settings.users ? undefined : ctx.secret("token", settings.token);
    const users = webUsersOf(settings, () => singleToken!);
    if (users.several && settings.token) log.warn("channels.web.token is not used: channels.web.users is set (each user signs in with their own token)");
    const history = new ChatHistory(join(ctx.dataDir, "history"), settings.historyPerChat);
    const files = new WebFiles(join(ctx.dataDir, "files"), ctx.config.media.retentionDays);
    // the chat (its conversation) a session's canvas is shown in, for the store's chat index
    const chatOf = (sessionKey: string) => {
      for (const u of users.all) {
        const chat = chatOfSessionKey(sessionKey, u);
        if (chat !== undefined) return scoped(u, chat);
      }
      return undefined;
    };
    const shownInWeb = (sessionKey: string) => chatOf(sessionKey) !== undefined;
    const canvas = new CanvasStore(join(ctx.dataDir, "canvas"), chatOf);
    const hub = new Hub(ctx, history, files, canvas);
    const sessionEnds = onSessionEnd(ctx.rt, (sessionKey) => hub.forgetCanvas(sessionKey));
    const web = await startWebServer(ctx, users, hub, files, canvas);
    serveTools(ctx.rt, [canvasTool({ store: canvas, log, onChange: (state) => hub.canvasChanged(state), allowScripts: settings.canvas.allowScripts })], { queue: CANVAS_QUEUE, policy: canvasPolicy(ctx.config, shownInWeb) });
    const url = `http://${settings.host}:${web.port}/`;
    if (users.several) log.info({ host: settings.host, port: web.port, url, users: users.all.map((u) => u.id) }, "web channel listening (each user opens the page with ?token=<their token>)");
    else log.info({ host: settings.host, port: web.port, url }, "web channel listening (open the page with ?token=<channels.web.token>)");
    const tailscale = exposeWithTailscale({ rt: ctx.rt, log, settings, port: web.port, tokens: webTokensOf(settings, singleToken) });
    return {
      textLimit: WEB_TEXT_LIMIT,
      // the page's markdown has no tables
      tables: "code",
      actions: WEB_ACTIONS,
      act: (req) => webAct(hub, users, req),
      async deliver(part) {
        const msg = part.message;
        const chat = chatOfConversation(users, msg.conversation);
        if (!chat) throw new DeliveryError(`"${msg.conversation}" is not a web chat of a configured user`, { permanent: true });
        // (actions never come here: the kit hands them to `act`)
        const kind = msg.kind === "typing" || msg.kind === "action" ? "notice" : msg.kind;
        // an attachment part: a line with the file (or, when it cannot be read, a text line saying so)
        const got = part.attachments[0] ? await outboundFile(ctx.rt.media, files, chat.user, part.attachments[0], ctx.log) : undefined;
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
        return { platformMessageId: `${chat.conversation}:${entry.seq}` };
      },
      async typing(msg) {
        const chat = chatOfConversation(users, msg.conversation);
        if (chat) hub.broadcast(chat, { type: "typing", chat: chat.chat });
      },
      async stop() {
        await tailscale.stop();
        sessionEnds.stop();
        hub.stop();
        await web.close();
        await history.close();
        await files.close();
        await canvas.close();
      },
    };
  },
});
