/**
 * The WhatsApp step's live check, one small real call (as checks.ts does for the other channels;
 * same timeout, Ctrl-C signal and scrubbing of the token):
 * `GET <apiBaseUrl>/<apiVersion>/<phoneNumberId>?fields=display_phone_number,verified_name` with
 * the bearer token answers 200 with the number and its display name. A refusal is Graph's error
 * body `{ error: { message, type, code, error_subcode, fbtrace_id } }`: code 190 is the token
 * (mistyped, expired, revoked); 100 (and 10, 200-299: permissions) an id that does not exist or
 * that the token may not read.
 */
import { oneLineText } from "../../../shared/runtime/prompt-text.js";
import { call, CHECK_TIMEOUT_MS, isResult, scrub, type CheckResult } from "./checks.js";

export interface WhatsAppTarget {
  /** channels.whatsapp.apiBaseUrl (https://graph.facebook.com unless a test points it elsewhere) */
  apiBaseUrl: string;
  apiVersion: string;
  phoneNumberId: string;
}

const META = "https://graph.facebook.com";

const WHATSAPP_TOKEN_FIX = "the token is mistyped, expired or revoked (the API Setup page's token lasts only a day): in Meta Business Settings > Users > System users, Generate new token for your app with whatsapp_business_messaging and whatsapp_business_management and expiry Never, then enter it again";
const ID_FIX = "check the Phone number ID (your Meta app > WhatsApp > API Setup: the digits under the number, not the number itself), and that the System User was assigned the WhatsApp account (full control) and its token has whatsapp_business_management";

export async function checkWhatsAppNumber(t: WhatsAppTarget, token: string, timeoutMs = CHECK_TIMEOUT_MS, signal?: AbortSignal): Promise<CheckResult> {
  const base = t.apiBaseUrl.replace(/\/+$/, "");
  const api = base === META ? "Meta's Graph API" : `the Graph API at ${base}`;
  const url = `${base}/${encodeURIComponent(t.apiVersion)}/${encodeURIComponent(t.phoneNumberId)}?fields=display_phone_number,verified_name`;
  const r = await call(url, { method: "GET", headers: { Authorization: `Bearer ${token}` } }, timeoutMs, token, api, signal);
  if (isResult(r)) return r.ok ? r : { ...r, fix: `check this machine's internet connection (and a proxy, if you use one)${base === META ? "" : `, and channels.whatsapp.apiBaseUrl (${base})`}` };
  // the server's text goes to a terminal: one line without control characters (no escape sequences), never the token
  if (r.status === 200 && typeof r.body.display_phone_number === "string") {
    const verified = typeof r.body.verified_name === "string" ? oneLineText(r.body.verified_name, 100) : "";
    return { ok: true, detail: scrub(`WhatsApp knows phone number id ${t.phoneNumberId} as ${oneLineText(r.body.display_phone_number, 40)}${verified ? ` ("${verified}")` : ""}`, [token]) };
  }
  const error = (r.body.error !== null && typeof r.body.error === "object" ? r.body.error : {}) as Record<string, unknown>;
  const code = typeof error.code === "number" ? error.code : undefined;
  const message = oneLineText(typeof error.message === "string" ? error.message : typeof r.body.text === "string" ? r.body.text : "", 200);
  const why = scrub(`HTTP ${r.status}${code !== undefined ? `, code ${code}` : ""}${message ? `: ${message}` : ""}`, [token]);
  if (code === 190 || (code === undefined && r.status === 401)) return { ok: false, kind: "auth", problem: `${api} refused the access token (${why})`, fix: WHATSAPP_TOKEN_FIX };
  if (code === 100 || code === 10 || (code !== undefined && code >= 200 && code < 300) || r.status === 403 || r.status === 404) {
    return { ok: false, kind: "other", problem: `${api} cannot read phone number id ${t.phoneNumberId} with this token (${why})`, fix: ID_FIX };
  }
  return { ok: false, kind: "other", problem: `${api} answered ${why}`, fix: `check channels.whatsapp.apiVersion (${t.apiVersion}) and apiBaseUrl in config.json, or try again later` };
}
