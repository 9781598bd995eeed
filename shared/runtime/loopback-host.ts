/**
 * Whether a host (or a URL's host) is this machine: `localhost`, `::1` (bracketed or not) or an
 * IPv4 address 127.x.y.z — a DNS name such as `127.example.com` is not. The one rule of
 * `lurkbot start` (a nats-server it may start), the NATS transport check (credentials.ts),
 * `nats.ssh` (nats.url must stay loopback), the web chat's Tailscale publishing
 * (tailscale-policy.ts), the Matrix and Signal endpoints and the security audit.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Whether `url` points at this machine (false for a URL that does not parse). */
export function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}
