/**
 * How updates arrive, as `channels.telegram.mode` says; each goes to `handle` (which stores it
 * in LURK_INBOUND) before Telegram is told it was taken.
 * - "polling": getUpdates (poller.ts); a webhook left set (getWebhookInfo has a url) is deleted
 *   first, keeping its pending updates, since getUpdates answers 409 while one is set.
 * - "webhook": listens (webhook.ts), then registers `webhookUrl` with the secret token. The
 *   webhook is not deleted on stop: Telegram queues updates while the channel restarts.
 * Resolves to the function that stops receiving.
 */
import type { Api } from "grammy";
import type { Update } from "grammy/types";
import { LurkError } from "../../shared/contract/index.js";
import type { ChannelContext } from "../../shared/runtime/channel/index.js";
import type { TelegramChannelConfig } from "../../shared/runtime/config-channels.js";
import { ALLOWED_UPDATES, Poller } from "./poller.js";
import { startWebhookServer } from "./webhook.js";

export async function receiveUpdates(ctx: ChannelContext<TelegramChannelConfig>, api: Api, handle: (update: Update) => Promise<void>): Promise<() => Promise<void>> {
  const { settings, log } = ctx;
  if (settings.mode === "webhook") {
    const url = settings.webhookUrl;
    if (!url) throw new LurkError("CONFIG_INVALID", "channels.telegram.webhookUrl is required when mode is \"webhook\": the public https URL Telegram sends updates to");
    const secret = ctx.secret("webhookSecret", settings.webhookSecret);
    const server = await startWebhookServer({ host: settings.webhookHost, port: settings.webhookPort, path: settings.webhookPath, secret, log, handle });
    try {
      await api.setWebhook(url, { secret_token: secret, allowed_updates: [...ALLOWED_UPDATES], drop_pending_updates: false });
    } catch (err) {
      await server.close();
      throw err;
    }
    log.info({ host: settings.webhookHost, port: server.port, path: settings.webhookPath, url: new URL(url).origin }, "telegram webhook set; listening");
    return () => server.close();
  }
  const info = await api.getWebhookInfo();
  if (info.url) {
    log.info({ url: new URL(info.url).origin, pending: info.pending_update_count }, "deleting the Telegram webhook for polling (pending updates kept)");
    await api.deleteWebhook({ drop_pending_updates: false });
  }
  const poller = new Poller({ api, log, timeoutSec: settings.pollTimeoutSec, handle });
  poller.start();
  return () => poller.stop();
}
