/**
 * The Signal and Matrix channels' questions, when the channels step enabled them:
 *  - Signal: the bot's number (E.164) and signal-cli's HTTP daemon (on this machine unless
 *    config.json allows a remote one), checked live with `GET /api/v1/check`;
 *  - Matrix: the homeserver, the bot's user id and its access token (a secret, stored in
 *    credentials/secrets.json as LURKBOT_MATRIX_ACCESS_TOKEN like the other channels' tokens),
 *    checked live with `/account/whoami`, whose user_id must be the one given.
 * A failed check is handled as for the other tokens: again, keep, leave the channel off, cancel;
 * with --non-interactive it ends the wizard (exit 1) unless --skip-check.
 */
import { CHANNEL_TOKEN_ENV, matrixUserIdSchema, signalNumberSchema } from "../../../shared/runtime/config-channels.js";
import { afterChannelCheck, channelToken } from "./channel-token.js";
import { CHECK_TIMEOUT_MS } from "./checks.js";
import { checkMatrixWhoami, checkSignalDaemon } from "./checks-signal-matrix.js";
import type { WizardStep } from "./session.js";

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

function urlProblem(value: string, opts: { loopbackOnly?: boolean; plainHttpOk?: boolean }): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return "not a URL: write it as http://127.0.0.1:8080 or https://matrix.example.org";
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return "use http:// or https://";
  const loopback = LOOPBACK.test(u.hostname);
  if (opts.loopbackOnly && !loopback) {
    return "signal-cli's HTTP interface has no authentication: run the daemon on this machine (http://127.0.0.1:8080), or first allow a remote one with `npx lurkbot config set channels.signal.allowRemote true` (the audit reports it)";
  }
  if (!opts.plainHttpOk && u.protocol === "http:" && !loopback) return "use https:// (plain http only to a homeserver on this machine, or with channels.matrix.allowPlainHttp set in config.json)";
  return undefined;
}

const signal: WizardStep = {
  id: "signal",
  when: (s) => s.state.channels.includes("signal"),
  async run(s) {
    const raw = (s.state.raw.channels?.signal ?? {}) as Record<string, any>;
    s.prompt.say("Signal: LurkBot talks to signal-cli's HTTP daemon (`signal-cli -a +NUMBER daemon --http 127.0.0.1:8080`; services/channel-signal/README.md).");
    const account = await s.prompt.text({
      id: "signalAccount", message: "The bot's Signal number (E.164, e.g. +15551234567)", ...(s.state.signal?.account ?? raw.account ? { default: s.state.signal?.account ?? raw.account } : {}),
      validate: (v) => (signalNumberSchema.safeParse(v).success ? undefined : "a phone number in E.164 form: + then the country code and number, e.g. +15551234567"),
    });
    const url = await s.prompt.text({
      id: "signalUrl", message: "signal-cli daemon URL", default: s.state.signal?.url ?? raw.url ?? "http://127.0.0.1:8080",
      validate: (v) => urlProblem(v, { loopbackOnly: raw.allowRemote !== true, plainHttpOk: true }),
    });
    s.state.signal = { account, url };
    if (s.state.skipCheck) return;
    const result = await checkSignalDaemon(url, CHECK_TIMEOUT_MS, s.prompt.signal);
    if (result.ok) {
      s.prompt.say(`  ok: ${result.detail}.`);
      s.state.checked.push("signal");
      return;
    }
    return afterChannelCheck(s, "signal", "Signal daemon", result, { again: "signal", againLabel: "enter it again", advice: result.fix });
  },
};

const MATRIX_TOKEN = CHANNEL_TOKEN_ENV.find((t) => t.channel === "matrix" && t.field === "accessToken")!;

const matrix: WizardStep = {
  id: "matrix",
  when: (s) => s.state.channels.includes("matrix"),
  async run(s) {
    const raw = (s.state.raw.channels?.matrix ?? {}) as Record<string, any>;
    const again = s.trail.filter((t) => t === "matrix").length > 1;
    s.prompt.say("Matrix: a bot account of its own on your homeserver, with rooms that are not end-to-end encrypted (services/channel-matrix/README.md).");
    const homeserverUrl = await s.prompt.text({
      id: "matrixHomeserver", message: "Homeserver URL (e.g. https://matrix.example.org)", ...(s.state.matrix?.homeserverUrl ?? raw.homeserverUrl ? { default: s.state.matrix?.homeserverUrl ?? raw.homeserverUrl } : {}),
      validate: (v) => urlProblem(v, { plainHttpOk: raw.allowPlainHttp === true }),
    });
    const userId = await s.prompt.text({
      id: "matrixUserId", message: "The bot's user id (e.g. @lurkbot:example.org)", ...(s.state.matrix?.userId ?? raw.userId ? { default: s.state.matrix?.userId ?? raw.userId } : {}),
      validate: (v) => (matrixUserIdSchema.safeParse(v).success ? undefined : "a Matrix user id: @localpart:server, e.g. @lurkbot:example.org"),
    });
    s.state.matrix = { homeserverUrl, userId };
    const token = await channelToken(s, MATRIX_TOKEN, "matrixToken", "Matrix access token", again,
      (v) => (/\s/.test(v) ? "a token has no spaces; paste it again" : v.length < 8 || v.length > 2048 ? "that is too short or too long for an access token; copy it again" : undefined));
    if (s.state.skipCheck) return;
    const result = await checkMatrixWhoami(homeserverUrl, userId, token, CHECK_TIMEOUT_MS, s.prompt.signal);
    if (result.ok) {
      s.prompt.say(`  ok: ${result.detail}.`);
      s.state.checked.push("matrixToken");
      return;
    }
    return afterChannelCheck(s, "matrix", "Matrix access token", result, { again: "matrix", againLabel: "enter it again", advice: result.fix });
  },
};

export const SIGNAL_MATRIX_STEPS: WizardStep[] = [signal, matrix];
