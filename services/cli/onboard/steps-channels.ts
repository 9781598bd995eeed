/**
 * The channels: which chat channels to enable besides the terminal, each platform's token
 * (checked live against the API root of the config: Telegram getMe, Discord /users/@me, Slack
 * auth.test and apps.connections.open), and who may message the bot directly.
 */
import { CHANNEL_TOKEN_ENV, enabledChannels } from "../../../shared/runtime/config-channels.js";
import { CHECK_TIMEOUT_MS, checkChannelToken, type ChannelApiRoots } from "./checks.js";
import { afterChannelCheck, channelToken } from "./channel-token.js";
import type { ChatChannel, WizardStep } from "./session.js";
import { SIGNAL_MATRIX_STEPS } from "./steps-signal-matrix.js";
import { WHATSAPP_STEPS } from "./steps-whatsapp.js";

export const CHAT_CHANNELS: ChatChannel[] = ["web", "telegram", "discord", "slack", "signal", "matrix", "whatsapp"];
const PLATFORMS = ["telegram", "discord", "slack"] as const;
type Platform = (typeof PLATFORMS)[number];
/** the channels whose direct messages routing.dm governs (the web chat and the terminal are the owner's) */
const DM_CHANNELS = [...PLATFORMS, "signal", "matrix", "whatsapp"] as const;

const LABELS: Record<string, string> = {
  "telegram.botToken": "Telegram bot token",
  "discord.botToken": "Discord bot token",
  "slack.botToken": "Slack bot token (xoxb-…)",
  "slack.appToken": "Slack app-level token (xapp-…)",
};

/** the question id (and flag stem) of a channel token: telegramToken, discordToken, slackBotToken, slackAppToken */
export const tokenId = (channel: string, field: string) => (channel === "slack" ? `slack${field === "appToken" ? "App" : "Bot"}Token` : `${channel}Token`);

function tokenProblem(channel: string, field: string, v: string): string | undefined {
  if (/\s/.test(v)) return "a token has no spaces; paste it again";
  if (channel === "telegram" && !/^\d+:[A-Za-z0-9_-]{10,}$/.test(v)) return "a Telegram bot token looks like 123456789:AAE…; copy it again from @BotFather";
  if (channel === "slack" && field === "botToken" && !v.startsWith("xoxb-")) return "a Slack bot token starts with xoxb-";
  if (channel === "slack" && field === "appToken" && !v.startsWith("xapp-")) return "a Slack app-level token starts with xapp-";
  if (v.length < 20 || v.length > 300) return "that is too short or too long for a bot token; copy it again";
  return undefined;
}

/** The API roots of the config (tests point them to fakes), else the platforms' own. */
export function apiRoots(raw: Record<string, any>): ChannelApiRoots {
  return {
    telegram: raw.channels?.telegram?.apiRoot ?? "https://api.telegram.org",
    discord: raw.channels?.discord?.apiRoot ?? "https://discord.com/api",
    slack: raw.channels?.slack?.apiUrl ?? "https://slack.com/api/",
  };
}

const channels: WizardStep = {
  id: "channels",
  async run(s) {
    const current = enabledChannels((s.state.raw.channels ?? {}) as never).filter((c): c is ChatChannel => (CHAT_CHANNELS as string[]).includes(c));
    s.prompt.say("The terminal (`npx lurkbot chat`) is always there.");
    s.state.channels = await s.prompt.multiselect<ChatChannel>({
      id: "channels", message: "Chat channels to enable:", default: s.state.channels.length ? s.state.channels : current.length ? current : ["web"],
      choices: [
        { value: "web", label: "Web chat", hint: "a page on this machine (127.0.0.1:8790) with a generated token" },
        { value: "telegram", label: "Telegram", hint: "a bot token from @BotFather" },
        { value: "discord", label: "Discord", hint: "a bot token from the Developer Portal" },
        { value: "slack", label: "Slack", hint: "a bot token and an app-level token (Socket Mode)" },
        { value: "signal", label: "Signal", hint: "a number of its own through signal-cli's HTTP daemon on this machine" },
        { value: "matrix", label: "Matrix", hint: "a bot account on your homeserver and its access token (no encrypted rooms)" },
        { value: "whatsapp", label: "WhatsApp", hint: "a WhatsApp Business number through Meta's Cloud API; needs a public https URL for its webhook" },
      ],
    });
  },
};

function tokenStep(channel: Platform, field: "botToken" | "appToken"): WizardStep {
  const spec = CHANNEL_TOKEN_ENV.find((t) => t.channel === channel && t.field === field)!;
  const id = tokenId(channel, field);
  const label = LABELS[`${channel}.${field}`]!;
  return {
    id,
    when: (s) => s.state.channels.includes(channel),
    async run(s) {
      const again = s.trail.filter((t) => t === id).length > 1;
      const token = await channelToken(s, spec, id, label, again, (v) => tokenProblem(channel, field, v));
      if (s.state.skipCheck) return;
      const result = await checkChannelToken(channel, field, token, apiRoots(s.state.raw), CHECK_TIMEOUT_MS, s.prompt.signal);
      if (result.ok) {
        s.prompt.say(`  ok: ${result.detail}.`);
        s.state.checked.push(id);
        return;
      }
      return afterChannelCheck(s, channel, label, result, { again: id, againLabel: "enter the token again", advice: `Check ${spec.env}'s value (${result.fix})` });
    },
  };
}

const dmPolicy: WizardStep = {
  id: "dmPolicy",
  when: (s) => s.state.channels.some((c) => (DM_CHANNELS as readonly string[]).includes(c)),
  async run(s) {
    const current = s.state.raw.routing?.dm?.policy as string | undefined;
    s.state.dmPolicy = await s.prompt.select<NonNullable<typeof s.state.dmPolicy>>({
      id: "dmPolicy", message: "Who may message the bot directly on Telegram, Discord, Slack, Signal, Matrix or WhatsApp?", default: (current as never) ?? "pairing",
      choices: [
        { value: "pairing", label: "pairing", hint: "recommended: an unknown sender gets a code; you let them in with `npx lurkbot pairing approve CODE`" },
        { value: "allowlist", label: "allowlist", hint: "only senders in routing.dm.allowFrom (and paired ones)" },
        { value: "open", label: "open", hint: "anyone who finds the bot (and it can run tools for them)" },
        { value: "disabled", label: "disabled", hint: "no direct messages" },
      ],
    });
  },
};

export const CHANNEL_STEPS: WizardStep[] = [
  channels,
  tokenStep("telegram", "botToken"),
  tokenStep("discord", "botToken"),
  tokenStep("slack", "botToken"),
  tokenStep("slack", "appToken"),
  ...SIGNAL_MATRIX_STEPS,
  ...WHATSAPP_STEPS,
  dmPolicy,
];
