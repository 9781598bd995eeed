/**
 * The WhatsApp channel (`channels.whatsapp`, services/channel-whatsapp/README.md), when enabled:
 *  - `channel.whatsapp.refused` (warning): appSecret, verifyToken, accessToken or phoneNumberId
 *    is missing: the channel refuses to start (the same rule, services/channel-whatsapp/actor.ts),
 *    since without the app secret nobody could tell Meta's webhook from a forged one.
 * Its listening address is the network checks' (a listener like the other webhooks), the
 * secrets in config.json the files check's (CHANNEL_TOKEN_ENV: WHATSAPP_*), open DMs the access
 * checks'.
 */
import { envFor } from "./files.js";
import { finding, type AuditContext, type AuditFinding } from "./finding.js";

/** what the channel needs (its variables: CHANNEL_TOKEN_ENV, through envFor) */
const NEEDED = [
  { field: "appSecret", what: "the Meta app's App secret (App settings > Basic): every webhook is checked against its signature" },
  { field: "verifyToken", what: "the verify token Meta's subscription check must present (`openssl rand -hex 24`, typed into the app's webhook settings too)" },
  { field: "accessToken", what: "a permanent System User token with whatsapp_business_messaging" },
  { field: "phoneNumberId", what: "the business number's Phone number ID (WhatsApp > API Setup)" },
] as const;

export function whatsappChecks({ config }: AuditContext): AuditFinding[] {
  const w = config.channels.whatsapp;
  if (!w?.enabled) return [];
  const missing = NEEDED.filter((n) => !w[n.field]);
  if (missing.length === 0) return [];
  return [finding({
    id: "channel.whatsapp.refused", level: "warning",
    title: `the WhatsApp channel will refuse to start: ${missing.map((m) => `channels.whatsapp.${m.field}`).join(", ")} ${missing.length === 1 ? "is" : "are"} not set`,
    detail: `channel-whatsapp stops at start without ${missing.map((m) => `${m.field} (${m.what})`).join("; ")}. Without the app secret anyone who finds the webhook URL could send the agent forged messages, so the channel never runs unsigned; as configured no WhatsApp message is answered.`,
    fix: missing.map((m) => {
      const env = envFor(`channels.whatsapp.${m.field}`);
      return env ? `set ${env} in the environment (or channels.whatsapp.${m.field})` : `set channels.whatsapp.${m.field}`;
    }).join("; "),
  })];
}
