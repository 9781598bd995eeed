/**
 * The WhatsApp channel's questions, when the channels step enabled it (services/channel-whatsapp):
 *  - `whatsapp`: the business number's Phone number ID and the permanent access token, checked
 *    live (checks-whatsapp.ts: the number's display name, or what to fix for 190 / 100 / network);
 *    a failed check is handled as for the other tokens (again, keep, leave WhatsApp off, cancel);
 *  - `whatsappWebhook`: the app secret, and the webhook's verify token: generated (24 random
 *    bytes, hex) unless the user types one; where the webhook listens and the public https URL
 *    Meta needs. The summary shows a generated token once, with where to paste it.
 * The three secrets go to credentials/secrets.json (WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET,
 * WHATSAPP_VERIFY_TOKEN) like the other channels' tokens; config.json gets `enabled` and
 * `phoneNumberId` only.
 */
import { randomBytes } from "node:crypto";
import type { z } from "zod";
import { dmRules } from "../../../shared/runtime/access-policy.js";
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { CHANNEL_TOKEN_ENV, whatsappChannelSchema } from "../../../shared/runtime/config-channels.js";
import { afterChannelCheck, channelToken } from "./channel-token.js";
import { CHECK_TIMEOUT_MS } from "./checks.js";
import { checkWhatsAppNumber } from "./checks-whatsapp.js";
import type { OnboardState, WizardSession, WizardStep } from "./session.js";

const spec = (field: string) => CHANNEL_TOKEN_ENV.find((t) => t.channel === "whatsapp" && t.field === field)!;
const ACCESS = spec("accessToken");
const APP_SECRET = spec("appSecret");
const VERIFY = spec("verifyToken");

const shape = whatsappChannelSchema.shape;
const phoneNumberIdSchema = shape.phoneNumberId.unwrap();

/** A field's value in config.json when valid, else its default. */
const valid = <T>(schema: z.ZodType<T>, value: unknown): T => {
  const r = schema.safeParse(value);
  return r.success ? r.data : schema.parse(undefined);
};

/** channels.whatsapp's Graph API and webhook settings: config.json's where valid, else the defaults. */
function whatsappSettings(raw: Record<string, any>): { apiBaseUrl: string; apiVersion: string; host: string; port: number; path: string } {
  const c = (raw.channels?.whatsapp ?? {}) as Record<string, unknown>;
  return {
    apiBaseUrl: valid(shape.apiBaseUrl, c.apiBaseUrl), apiVersion: valid(shape.apiVersion, c.apiVersion),
    host: valid(shape.host, c.host), port: valid(shape.port, c.port), path: valid(shape.path, c.path),
  };
}

/** host:port of the webhook as a reverse proxy's upstream (a wildcard listen address is reached on loopback; IPv6 in brackets) */
const upstream = (w: { host: string; port: number }): string => {
  const host = w.host === "0.0.0.0" ? "127.0.0.1" : w.host === "::" ? "::1" : w.host;
  return `${host.includes(":") ? `[${host}]` : host}:${w.port}`;
};

const secretProblem = (what: string, min: number, max: number) => (v: string): string | undefined =>
  !/^[\x21-\x7e]+$/.test(v) ? `${what} has no spaces (printable ASCII only); paste it again` : v.length < min || v.length > max ? `that is too short or too long for ${what} (${min} to ${max} characters); copy it again` : undefined;

const whatsapp: WizardStep = {
  id: "whatsapp",
  when: (s) => s.state.channels.includes("whatsapp"),
  async run(s) {
    const raw = (s.state.raw.channels?.whatsapp ?? {}) as Record<string, any>;
    const again = s.trail.filter((t) => t === "whatsapp").length > 1;
    if (!again) s.prompt.say("WhatsApp: a WhatsApp Business number of your own through Meta's Cloud API; Meta must reach a webhook of yours over public HTTPS (services/channel-whatsapp/README.md, Setup).");
    const previous = s.state.whatsapp?.phoneNumberId ?? (typeof raw.phoneNumberId === "string" ? raw.phoneNumberId : undefined);
    s.prompt.say("  the Phone number ID: your Meta app > WhatsApp > API Setup, the digits shown under the bot's number (not the phone number itself).");
    const phoneNumberId = await s.prompt.text({
      id: "whatsappPhoneNumberId", message: "WhatsApp Phone number ID (digits)", ...(previous ? { default: previous } : {}),
      validate: (v) => (phoneNumberIdSchema.safeParse(v).success ? undefined : "the Phone number ID is 5 to 30 digits (API Setup, under the number), not the phone number: no +, spaces or dashes"),
    });
    s.state.whatsapp = { ...s.state.whatsapp, phoneNumberId };
    if (!s.existingSecret(ACCESS.env, "channels.whatsapp.accessToken") || again) s.prompt.say("  the token on the API Setup page expires within a day: use a System User's token that never expires.");
    const token = await channelToken(s, ACCESS, "whatsappToken", "WhatsApp access token", again, secretProblem("an access token", 20, 2048));
    if (s.state.skipCheck) return;
    const { apiBaseUrl, apiVersion } = whatsappSettings(s.state.raw);
    const result = await checkWhatsAppNumber({ apiBaseUrl, apiVersion, phoneNumberId }, token, CHECK_TIMEOUT_MS, s.prompt.signal);
    if (result.ok) {
      s.prompt.say(`  ok: ${result.detail}.`);
      s.state.checked.push("whatsappToken");
      return;
    }
    return afterChannelCheck(s, "whatsapp", "WhatsApp access token", result, { again: "whatsapp", againLabel: "enter the phone number id and token again", advice: result.fix });
  },
};

const webhook: WizardStep = {
  id: "whatsappWebhook",
  when: (s) => s.state.channels.includes("whatsapp"),
  async run(s) {
    await channelToken(s, APP_SECRET, "whatsappAppSecret", "WhatsApp app secret", false, secretProblem("an app secret", 16, 256));
    const w = whatsappSettings(s.state.raw);
    s.prompt.say(`WhatsApp webhook: Meta POSTs each message to a public https URL of yours. The channel listens on ${w.host}:${w.port} at ${w.path} (channels.whatsapp.host, .port, .path; defaults 127.0.0.1, 8791, /whatsapp/webhook).`);
    s.prompt.say(`  Meta needs public HTTPS with a valid certificate: a reverse proxy you run (Caddy: \`reverse_proxy ${w.path} ${upstream(w)}\`) or Tailscale Funnel (\`tailscale funnel --bg --https=8443 http://${upstream(w)}/\`); keep the port itself closed.`);
    s.prompt.say(`  The callback URL to give Meta: https://<your public host>${w.path} (with :8443 after the host when Funnel serves there).`);
    await verifyToken(s);
  },
};

/** The verify token: kept, generated (shown once by the summary), or typed. */
async function verifyToken(s: WizardSession): Promise<void> {
  const st = s.state;
  const found = s.existingSecret(VERIFY.env, "channels.whatsapp.verifyToken");
  st.whatsapp = { ...st.whatsapp!, verifyTokenGenerated: false };
  if (found && !s.hasPreset("whatsappVerifyToken")) {
    if (await s.prompt.confirm({ id: "keepWhatsappVerifyToken", message: `The webhook verify token is set (${found.source}); keep it (it must match the one in Meta's webhook settings)?`, default: true })) {
      if (found.source.includes("config.json")) st.secrets[VERIFY.env] = found.value;
      return;
    }
  }
  if (!s.hasPreset("whatsappVerifyToken") && await s.prompt.confirm({ id: "whatsappVerifyGenerate", message: "Generate a random webhook verify token (recommended; you paste it into Meta's webhook settings)?", default: true })) {
    st.secrets[VERIFY.env] = randomBytes(24).toString("hex");
    st.whatsapp!.verifyTokenGenerated = true;
    return;
  }
  s.prompt.say(`Webhook verify token: ${VERIFY.where}.`);
  st.secrets[VERIFY.env] = await s.prompt.secret({ id: "whatsappVerifyToken", message: "Webhook verify token (16+ characters)", validate: secretProblem("a verify token", 16, 256) });
}

/** The summary's WhatsApp lines (`cfg`: the config as written and loaded): where to register the webhook, the verify token (a generated one shown once, to a person), the DM rules. */
export function whatsappSummary(st: OnboardState, cfg: LurkConfig, interactive: boolean, secretsPath: string): string[] {
  const w = cfg.channels.whatsapp;
  if (!st.channels.includes("whatsapp") || !w) return [];
  const token = st.secrets[VERIFY.env];
  const verify = st.whatsapp?.verifyTokenGenerated && token
    ? interactive ? `${token}  (generated; shown only now, stored as ${VERIFY.env} in ${secretsPath})` : `the generated ${VERIFY.env} in ${secretsPath}`
    : `the one you chose (${VERIFY.env})`;
  const dm = dmRules("whatsapp", cfg).policy;
  return [
    "whatsapp: register the webhook in your Meta app > WhatsApp > Configuration > Webhook > Edit:",
    `    callback URL: https://<your public host>${w.path}  (reaching ${upstream(w)} through your reverse proxy or Tailscale Funnel)`,
    `    verify token: ${verify}`,
    "    then Verify and save (after `npx lurkbot start`), and under Manage subscribe to the \"messages\" field",
    `whatsapp DMs follow routing.dm like the other chat channels: policy ${dm}${dm === "pairing" ? " (a new sender gets a code: `npx lurkbot pairing approve CODE`)" : ""}`,
  ];
}

export const WHATSAPP_STEPS: WizardStep[] = [whatsapp, webhook];
