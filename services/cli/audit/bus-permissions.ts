/**
 * What the running nats-server lets the CLI's `cli` user do beyond its contract grant
 * (shared/contract/actors.ts): it subscribes to subjects of other actors (their inboxes, other
 * channels' traffic, tool calls, sessions, approvals, the lurk_auth bucket) and publishes an
 * event in another actor's name. Each probe is first checked against the grant (one the
 * contract allows is skipped), and none has an effect when the server does allow it: the
 * subscriptions' messages are dropped unread and the event is a no-op "audit-probe".
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { actorGrants, AUTH_BUCKET, expandGrant, inboxPrefix, subjects } from "../../../shared/contract/index.js";
import { subjectMatches } from "../tail.js";
import { finding, type AuditFinding } from "./finding.js";

const PROBE_WAIT_MS = 500;

/** Subjects the cli user must not subscribe to (each checked against its grant), and one it must not publish. */
function probes(prefix: string): { subscribe: string[]; publish: string[] } {
  const s = subjects(prefix);
  return {
    subscribe: [
      `${inboxPrefix("router")}.audit`, `${inboxPrefix("agent-runner")}.audit`, `${inboxPrefix("approvals")}.audit`,
      s.inbound("telegram"), `${prefix}.out.telegram.audit`, `${prefix}.tools.call.exec`, `${prefix}.sessions.history`,
      `${prefix}.approvals.decide`, `$KV.${AUTH_BUCKET}.audit`,
    ],
    publish: [`${prefix}.evt.router.audit-probe`],
  };
}

export async function permissionChecks(nc: NatsConnection, prefix: string): Promise<AuditFinding[]> {
  const grant = actorGrants(prefix).find((g) => g.user === "cli");
  if (!grant) return [];
  const allowed = expandGrant(grant, prefix);
  const outside = (patterns: string[], subject: string) => !patterns.some((p) => subjectMatches(p, subject));
  const p = probes(prefix);
  const subProbes = p.subscribe.filter((x) => outside(allowed.subscribe, x));
  const pubProbes = p.publish.filter((x) => outside(allowed.publish, x));

  const refusedPub = new Set<string>();
  // refusals of a publish arrive as status errors, until the connection closes
  void (async () => {
    for await (const st of nc.status()) {
      const e = (st as { type: string; error?: { name?: string; operation?: string; subject?: string } }).error;
      if (st.type === "error" && e?.name === "PermissionViolationError" && e.operation === "publish" && e.subject) refusedPub.add(e.subject);
    }
  })().catch(() => undefined);
  const subs = subProbes.map((subject) => {
    const sub = nc.subscribe(subject);
    const refused = (async () => {
      try {
        for await (const _ of sub) { /* a permitted subscription only waits; its messages are dropped unread */ }
        return false;
      } catch {
        return true;
      }
    })();
    return { subject, sub, refused };
  });
  for (const subject of pubProbes) nc.publish(subject, "{}");
  await nc.flush();
  const timeout = new Promise<"open">((r) => setTimeout(() => r("open"), PROBE_WAIT_MS));
  const open: string[] = [];
  for (const s of subs) {
    if ((await Promise.race([s.refused, timeout])) !== true) open.push(`subscribe ${s.subject}`);
    s.sub.unsubscribe();
  }
  await timeout;
  for (const subject of pubProbes) if (!refusedPub.has(subject)) open.push(`publish ${subject}`);
  if (open.length === 0) return [];
  return [finding({
    id: "deep.nats.cli-permissions-too-wide", level: "critical",
    title: "the cli NATS user may do more than its contract allows",
    detail: `The running nats-server let the cli user ${open.join(", ")}. The contract (shared/contract/actors.ts) refuses these: with them, whoever holds the cli password (every host that runs the CLI) reads other actors' replies, other channels' conversations, tool calls or auth tokens, or speaks as another actor. The server runs a nats.conf that is not the generated one.`,
    fix: "`npx lurkbot setup` (rewrites nats.conf from the contract), start nats-server with it (or include it unchanged from server.conf) and reload it (`systemctl reload lurkbot-nats` or SIGHUP)",
  })];
}

