/**
 * Where the browser may go: web_fetch's rule (shared/runtime/public-address.ts). A host is
 * reachable when every address it resolves to is public, or when it is in
 * `tools.web.allowPrivateHosts` ("host" or "host:port"). URLs the agent gives must be http(s)
 * (or about:blank) without credentials. `resolveTarget` returns the checked address, so the
 * caller connects to exactly that address (no second DNS answer: rebinding cannot slip in).
 */
import { LurkError } from "../../shared/contract/index.js";
import { resolvePublicTarget, type Target } from "../../shared/runtime/public-address.js";

/** An absolute http(s) URL (or about:blank) the agent may ask for; TOOL_INVALID_ARGS otherwise. */
export function parseBrowserUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new LurkError("TOOL_INVALID_ARGS", `"${raw.slice(0, 200)}" is not a valid URL; give an absolute http:// or https:// URL`);
  }
  if (url.href === "about:blank") return url;
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new LurkError("TOOL_INVALID_ARGS", `the ${url.protocol.replace(/:$/, "")}: scheme is not allowed; the browser opens http:// and https:// URLs (and about:blank) only`);
  }
  if (url.username || url.password) throw new LurkError("TOOL_INVALID_ARGS", "URLs with a user name or password are not opened");
  return url;
}

/**
 * Resolves `url`'s host and decides whether the browser may connect to it: the address to use,
 * or FORBIDDEN (private, loopback, link-local... and not allowed) / TOOL_FAILED (no address).
 */
export function resolveTarget(url: URL, allowPrivateHosts: readonly string[]): Promise<Target> {
  return resolvePublicTarget(url, allowPrivateHosts, { verb: "open", hint: " (tools.web.allowPrivateHosts lists the exceptions)" });
}
