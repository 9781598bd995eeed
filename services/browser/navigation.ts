/**
 * Loading a URL in a tab, with the egress rule applied up front (a clear FORBIDDEN before
 * Chromium is asked) and again by the proxy for every redirect and subresource; a navigation the
 * proxy refused (a redirect to a private address) is FORBIDDEN too, with the proxy's reason.
 * A URL that is a file (Chromium downloads it instead) is a load that says so (`download`).
 * Also: Playwright errors as short LurkErrors, and the "blocked" lines of a result.
 */
import { LurkError } from "../../shared/contract/index.js";
import { parseBrowserUrl, resolveTarget } from "./egress.js";
import type { Refusal } from "./egress-proxy.js";
import type { BrowserSession, Tab } from "./session.js";

/** how long a loaded page's `load` event is waited for after DOMContentLoaded */
const LOAD_GRACE_MS = 3_000;

export interface Loaded {
  status?: number;
  /** URLs that redirected to the final one, in order */
  redirects: string[];
  /** the URL turned out to be a file: Chromium downloads it (downloads.ts) and the tab stays where it was */
  download?: boolean;
}

const firstLine = (err: unknown) => ((err as Error)?.message ?? String(err)).split("\n")[0]!.replace(/^\w+\.\w+: /, "").slice(0, 500);

/** A Playwright (or other) failure of `what` as a LurkError the model can read. */
export function toolError(err: unknown, what: string): LurkError {
  if (LurkError.is(err)) return err;
  const text = firstLine(err);
  if ((err as Error)?.name === "TimeoutError") return new LurkError("TIMEOUT", `${what} timed out: ${text}`);
  if (/has been closed|Target closed|browser has disconnected|crashed/i.test(text)) {
    return new LurkError("TOOL_FAILED", `${what} failed: the tab or the browser closed meanwhile (${text}); tabs shows what is open`);
  }
  return new LurkError("TOOL_FAILED", `${what} failed: ${text}`);
}

/** The refusal of the page's own origin, if the proxy refused it since `since`. */
function refusalOf(session: BrowserSession, pageUrl: string, since: number): Refusal | undefined {
  let origin: string;
  try {
    const u = new URL(pageUrl);
    origin = `${u.protocol}//${u.host}`;
  } catch {
    return undefined;
  }
  return session.refusalsSince(since).reverse().find((r) => r.kind === "forbidden" && (r.origin === origin || r.origin === origin.replace(/^http:/, "https:")));
}

/** After a failed load Chromium commits its error page a moment later: let it, so the next load is not interrupted by it. */
async function settleErrorPage(tab: Tab): Promise<void> {
  await tab.page.waitForURL(/^chrome-error:/, { timeout: 1_000, waitUntil: "load" }).catch(() => undefined);
}

/** Opens `raw` in `tab`: checked, loaded up to DOMContentLoaded (then `load`, briefly). */
export async function loadUrl(session: BrowserSession, tab: Tab, raw: string, allow: readonly string[]): Promise<Loaded> {
  const url = parseBrowserUrl(raw);
  if (url.href !== "about:blank") await resolveTarget(url, allow);
  tab.fresh = false;
  const since = Date.now();
  let response;
  for (let attempt = 1; ; attempt++) {
    try {
      response = await tab.page.goto(url.href, { waitUntil: "domcontentloaded" });
      break;
    } catch (err) {
      if (/Download is starting/.test(firstLine(err))) return { redirects: [], download: true };
      // a failed tunnel is an https/wss refusal: a plain http one in the same span is another request
      // (the error page's favicon from an origin refused before, say), not what stopped this load
      const tunnel = /ERR_TUNNEL_CONNECTION_FAILED/.test(firstLine(err));
      const refused = session.refusalsSince(since).filter((r) => !tunnel || !r.origin.startsWith("http://")).pop();
      if (refused && /ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY|interrupted by another navigation/.test(firstLine(err))) {
        await settleErrorPage(tab);
        if (refused.kind === "forbidden") throw new LurkError("FORBIDDEN", `${url.href} was not opened: it led to ${refused.origin}, which was refused: ${refused.reason}`);
        throw new LurkError("TOOL_FAILED", `${url.href} was not opened: it led to ${refused.origin}: ${refused.reason}`);
      }
      // the error page of an earlier failed load committing just now: once more
      if (attempt === 1 && /interrupted by another navigation to "chrome-error:/.test(firstLine(err))) continue;
      await settleErrorPage(tab);
      throw toolError(err, `opening ${url.href}`);
    }
  }
  const redirects: string[] = [];
  for (let r = response?.request().redirectedFrom(); r; r = r.redirectedFrom()) redirects.unshift(r.url());
  if (response?.headers()["x-lurkbot-refused"]) {
    const refused = refusalOf(session, response.url(), since);
    throw new LurkError("FORBIDDEN", `${url.href} was not opened: ${redirects.length ? `it redirected to ${response.url()}, which` : "it"} was refused: ${refused?.reason ?? "a non-public address"}`);
  }
  await tab.page.waitForLoadState("load", { timeout: LOAD_GRACE_MS }).catch(() => undefined);
  return { ...(response ? { status: response.status() } : {}), redirects };
}

/** Lines about requests the proxy refused since `since` (subresources, frames, redirects). */
export function blockedLines(session: BrowserSession, since: number): string[] {
  const refused = session.refusalsSince(since).filter((r) => r.kind === "forbidden");
  if (refused.length === 0) return [];
  const origins = [...new Map(refused.map((r) => [r.origin, r.reason])).entries()].slice(0, 5);
  return [`blocked: ${refused.length} request${refused.length === 1 ? "" : "s"} to non-public addresses (${origins.map(([o]) => o).join(", ")}); ${origins[0]![1]}`];
}
