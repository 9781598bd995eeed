/**
 * The live checks of the Signal and Matrix steps, one small real call each (as checks.ts does for
 * the other channels; same timeout, Ctrl-C signal and scrubbing of the token):
 *  - Signal: signal-cli's daemon answers `GET <url>/api/v1/check` with 200;
 *  - Matrix: `GET <homeserver>/_matrix/client/v3/account/whoami` with the access token answers
 *    200 with the `user_id` the step was given (another account's token is refused).
 */
import { call, CHECK_TIMEOUT_MS, isResult, scrub, type CheckResult } from "./checks.js";

export async function checkSignalDaemon(url: string, timeoutMs = CHECK_TIMEOUT_MS, signal?: AbortSignal): Promise<CheckResult> {
  const base = url.replace(/\/+$/, "");
  const r = await call(`${base}/api/v1/check`, { method: "GET" }, timeoutMs, "", `signal-cli's daemon at ${base}`, signal);
  if (isResult(r)) return r.ok ? r : { ...r, fix: `start it on this machine: \`signal-cli -a <number> daemon --http 127.0.0.1:8080\` (services/channel-signal/README.md), or correct the URL` };
  if (r.status === 200) return { ok: true, detail: `signal-cli's daemon answers at ${base}` };
  return { ok: false, kind: "other", problem: `${base}/api/v1/check answered HTTP ${r.status}, not 200: is that signal-cli's HTTP daemon?`, fix: "run `signal-cli -a <number> daemon --http 127.0.0.1:8080` and give its address" };
}

export async function checkMatrixWhoami(homeserverUrl: string, userId: string, token: string, timeoutMs = CHECK_TIMEOUT_MS, signal?: AbortSignal): Promise<CheckResult> {
  const base = homeserverUrl.replace(/\/+$/, "");
  const api = `the homeserver at ${base}`;
  const r = await call(`${base}/_matrix/client/v3/account/whoami`, { method: "GET", headers: { Authorization: `Bearer ${token}` } }, timeoutMs, token, api, signal);
  if (isResult(r)) return r.ok ? r : { ...r, fix: "check the homeserver URL (e.g. https://matrix.example.org) and that this machine reaches it" };
  const relogin = "log in as the bot again (POST /_matrix/client/v3/login, services/channel-matrix/README.md) and copy access_token";
  if (r.status === 401 || r.status === 403) return { ok: false, kind: "auth", problem: `${api} refused the access token (${r.status} ${scrub(String(r.body.errcode ?? r.body.text ?? ""), [token])})`, fix: relogin };
  if (r.status !== 200 || typeof r.body.user_id !== "string") return { ok: false, kind: "other", problem: `${api} answered HTTP ${r.status} without a user_id: is that a Matrix homeserver's client API?`, fix: "give the homeserver's client API base, e.g. https://matrix.example.org" };
  if (r.body.user_id !== userId) return { ok: false, kind: "auth", problem: `the access token is ${scrub(r.body.user_id, [token])}'s, not ${userId}'s`, fix: `use the bot account's own token, or give ${scrub(r.body.user_id, [token])} as the user id` };
  return { ok: true, detail: `${api} knows the token as ${userId}` };
}
