/**
 * Which IP addresses the web tools (web_fetch in services/tools/web/, the browser actor's egress
 * proxy) may connect to: `isPublicAddress` is true only for globally routable unicast addresses.
 * Refused: private (10/8, 172.16/12, 192.168/16), loopback (127/8, ::1), link-local
 * (169.254/16, fe80::/10), unique-local (fc00::/7), CGNAT (100.64/10), multicast, unspecified
 * (0.0.0.0/8, ::), broadcast and reserved, the documentation and benchmarking ranges, the old
 * site-local fec0::/10, and IPv6 forms that embed an IPv4 address (IPv4-mapped ::ffff:a.b.c.d,
 * IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) when the embedded address is not
 * public. IPv6 outside 2000::/3 is refused. `isAllowedPrivateHost` is the exception list
 * (`tools.web.allowPrivateHosts`). All pure except `resolvePublicTarget` (a DNS lookup), which
 * applies the rule to a URL and returns the checked address; `pinnedLookup` makes a connection go
 * to exactly that address (no DNS rebinding between the check and the connect).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP, isIPv4, isIPv6, type LookupFunction } from "node:net";
import { LurkError } from "../contract/index.js";

/** [network, prefix length] in IPv4 dotted form */
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local (cloud metadata lives here)
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and 255.255.255.255 broadcast
];

function v4ToInt(ip: string): number {
  return ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

const V4_TABLE = V4_BLOCKED.map(([net, bits]) => ({ base: v4ToInt(net), size: 2 ** (32 - bits) }));

function isPublicV4Int(value: number): boolean {
  return !V4_TABLE.some(({ base, size }) => value >= base && value < base + size);
}

/** An IPv6 address as 8 16-bit groups (`::` expanded, a dotted IPv4 tail converted). */
export function parseIPv6(ip: string): number[] | undefined {
  let text = ip.replace(/^\[|\]$/g, "");
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  if (!isIPv6(text)) return undefined;
  const lastColon = text.lastIndexOf(":");
  const last = text.slice(lastColon + 1);
  if (last.includes(".")) {
    const v = v4ToInt(last);
    text = `${text.slice(0, lastColon + 1)}${Math.floor(v / 65536).toString(16)}:${(v % 65536).toString(16)}`;
  }
  const [head, rest] = text.includes("::") ? text.split("::") as [string, string] : [text, undefined];
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const missing = 8 - left.length - right.length;
  if (rest === undefined && missing !== 0) return undefined;
  if (missing < 0) return undefined;
  const groups = [...left, ...Array<number>(rest === undefined ? 0 : missing).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

function isPublicV6(g: number[]): boolean {
  const embeddedV4 = (hi: number, lo: number) => hi * 65536 + lo;
  // ::/96 (unspecified, loopback, IPv4-compatible) and ::ffff:0:0/96 (IPv4-mapped)
  if (g.slice(0, 5).every((x) => x === 0)) {
    if (g[5] === 0xffff) return isPublicV4Int(embeddedV4(g[6]!, g[7]!));
    return false;
  }
  // NAT64 well-known prefix 64:ff9b::/96: as public as the address it embeds
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isPublicV4Int(embeddedV4(g[6]!, g[7]!));
  // 6to4 2002:aabb:ccdd::/48
  if (g[0] === 0x2002) return isPublicV4Int(embeddedV4(g[1]!, g[2]!));
  // global unicast is 2000::/3; everything else (fc00::/7, fe80::/10, fec0::/10, ff00::/8, 64:ff9b:1::/48, 100::/64 ...) is not
  if ((g[0]! & 0xe000) !== 0x2000) return false;
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false; // documentation
  if (g[0] === 0x2001 && g[1] === 0) return false; // Teredo (embeds an obfuscated IPv4)
  if (g[0] === 0x2001 && g[1]! < 0x200) return false; // 2001::/23 IETF protocol assignments
  if (g[0] === 0x3fff && g[1]! < 0x1000) return false; // 3fff::/20 documentation
  return true;
}

/** True only for a globally routable unicast address; false for anything else, invalid input included. */
export function isPublicAddress(ip: string): boolean {
  if (isIPv4(ip)) return isPublicV4Int(v4ToInt(ip));
  const groups = parseIPv6(ip);
  return groups !== undefined && isPublicV6(groups);
}

/** The hostname of a URL without IPv6 brackets, lower-case. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
}

/** The URL's port, or its scheme's default (80, 443). */
export function portOf(url: URL): string {
  return url.port || (url.protocol === "https:" || url.protocol === "wss:" ? "443" : "80");
}

/** Whether the URL's host (any port) or host:port is in the allow list (`tools.web.allowPrivateHosts`). */
export function isAllowedPrivateHost(url: URL, allow: readonly string[]): boolean {
  const host = bareHost(url);
  const port = portOf(url);
  return allow.some((entry) => {
    const e = entry.trim().toLowerCase();
    if (e === host || e === `[${host}]`) return true;
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(e);
    return m !== null && m[1]!.replace(/^\[|\]$/g, "") === host && m[2] === port;
  });
}

/** A checked address to connect to. */
export interface Target {
  address: string;
  family: 4 | 6;
}

export interface ResolveTargetOptions {
  /** what was refused, in the FORBIDDEN message: "refused to <verb> <origin>: ..." */
  verb: string;
  /** appended to the FORBIDDEN message */
  hint?: string;
  /** wraps the DNS lookup (e.g. to end the wait when a call is cancelled) */
  wait?: <T>(lookup: Promise<T>) => Promise<T>;
}

/**
 * Resolves `url`'s host and decides whether it may be reached: the address to connect to, or
 * FORBIDDEN (an address that is not public and a host not in `allow`) / TOOL_FAILED (no address).
 */
export async function resolvePublicTarget(url: URL, allow: readonly string[], opts: ResolveTargetOptions): Promise<Target> {
  const host = bareHost(url);
  const literal = isIP(host);
  let addresses: Target[];
  if (literal) addresses = [{ address: host, family: literal as 4 | 6 }];
  else {
    try {
      const found = dnsLookup(host, { all: true, verbatim: true });
      addresses = (await (opts.wait ? opts.wait(found) : found)).map((a) => ({ address: a.address, family: a.family as 4 | 6 }));
    } catch (err) {
      if (LurkError.is(err)) throw err;
      throw new LurkError("TOOL_FAILED", `could not resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    if (addresses.length === 0) throw new LurkError("TOOL_FAILED", `${host} has no addresses`);
  }
  if (!isAllowedPrivateHost(url, allow)) {
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked) {
      const what = literal ? `${host} is` : `${host} resolves to ${blocked.address}, which is`;
      throw new LurkError("FORBIDDEN", `refused to ${opts.verb} ${url.origin}: ${what} a private, loopback, link-local or otherwise non-public address${opts.hint ?? ""}`);
    }
  }
  return addresses[0]!;
}

/** A `lookup` (http.request, net.connect) that answers with the checked address only, whatever DNS says now. */
export function pinnedLookup(target: Target): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  }) as unknown as LookupFunction;
}
