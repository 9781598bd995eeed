/**
 * channel-webhook: signed HTTP requests in (server.ts), signed callbacks out (callback.ts),
 * through the channel kit (LURK_INBOUND before the 202; sent-ledger, retries and receipts for
 * callbacks).
 */
import { join } from "node:path";
import { closeHttpServer, defineChannelActor } from "../../shared/runtime/channel/index.js";
import { webhookChannelSchema } from "../../shared/runtime/config-channels.js";
import { postCallback } from "./callback.js";
import { SeenIds } from "./seen.js";
import { listen, webhookHandler } from "./server.js";

export const definition = defineChannelActor({
  channel: "webhook",
  description: "signed HTTP requests in, signed callbacks out",
  schema: webhookChannelSchema,
  metadata: (s) => ({ listen: `${s.host}:${s.port}`, callback: s.callbackUrl ? new URL(s.callbackUrl).origin : "none" }),
  async start(ctx) {
    const { settings, log } = ctx;
    const secret = ctx.secret("secret", settings.secret);
    const seen = new SeenIds(join(ctx.dataDir, "seen"), settings.toleranceSec * 2 * 1000);
    const { server, port } = await listen(webhookHandler(ctx, secret, seen), settings.host, settings.port);
    log.info({ host: settings.host, port, callback: settings.callbackUrl ? new URL(settings.callbackUrl).origin : null }, "webhook channel listening");
    if (!settings.callbackUrl) log.warn("channels.webhook.callbackUrl is not set: replies will be reported as failed deliveries");
    const target = { url: settings.callbackUrl, secret, timeoutMs: settings.callbackTimeoutMs, media: ctx.rt.media, log: ctx.log };
    return {
      textLimit: Infinity,
      deliver: (part, dctx) => postCallback(target, part, dctx.signal),
      async stop() {
        await closeHttpServer(server);
        await seen.close();
      },
    };
  },
});
