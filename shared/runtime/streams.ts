/**
 * The JetStream streams of the contract and their idempotent creation (by the admin user:
 * `lurkbot setup`, the launcher, the test harness). Actors only bind durable consumers.
 * The KV buckets (leases, shared/runtime/lease.ts; the cron actor's) are created here too:
 * actors may only read and write them.
 */
import { jetstreamManager, RetentionPolicy, StorageType, DiscardPolicy, type StreamConfig } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { MEDIA_DEFAULTS, MB, type MediaConfig } from "./config-media.js";
import { APPROVALS_BUCKET, AUTH_BUCKET, BOOTSTRAP_HOOKS_TTL_MS, ROUTER_BUCKET, MEDIA_BUCKET, CRON_FIRES_BUCKET, CRON_JOBS_BUCKET, HEARTBEAT_BUCKET, HOOKS_BUCKET, LEASE_BUCKET, STREAMS, SUBAGENTS_BUCKET, subjects } from "../contract/index.js";

const DAY_MS = 24 * 3600_000;
const DUPLICATE_WINDOW_MS = 2 * 60_000;

export function streamConfigs(prefix?: string): Array<Partial<StreamConfig> & { name: string; subjects: string[] }> {
  const s = subjects(prefix);
  const base = { storage: StorageType.File, num_replicas: 1, duplicate_window: nanos(DUPLICATE_WINDOW_MS), discard: DiscardPolicy.Old, max_msg_size: 1024 * 1024 };
  return [
    { ...base, name: STREAMS.inbound, subjects: [s.inboundAll, s.injectAll], retention: RetentionPolicy.Limits, max_age: nanos(7 * DAY_MS), description: "channel and system messages for the router" },
    { ...base, name: STREAMS.runs, subjects: [s.runRequestAll], retention: RetentionPolicy.Workqueue, max_age: nanos(7 * DAY_MS), description: "run requests for agent-runners (work queue)" },
    { ...base, name: STREAMS.outbound, subjects: [s.outboundAll], retention: RetentionPolicy.Limits, max_age: nanos(7 * DAY_MS), description: "deliveries for channels" },
    { ...base, name: STREAMS.deadLetter, subjects: [s.deadLetterAll], retention: RetentionPolicy.Limits, max_age: nanos(30 * DAY_MS), description: "messages that gave up after their retries" },
    // kept until a session is deleted (its subject is purged then): standbys rebuild their store from it
    { ...base, name: STREAMS.sessions, subjects: [s.sessionChangesAll], retention: RetentionPolicy.Limits, description: "the sessions actor's change sets, for its standbys (sessions.replication)" },
    // core publishes captured as they are (the publishers do not change): replayed to the hooks actor after it was down;
    // no per-run subject here (run ends stay core, followed only while a hook wants them)
    { ...base, name: STREAMS.hookEvents, subjects: [...s.hookEventSubjects], retention: RetentionPolicy.Limits, max_age: nanos(DAY_MS), max_bytes: 64 * 1024 * 1024, description: "chat commands, session resets and new sessions, for the hooks actor (kept a day)" },
  ];
}

/**
 * The KV buckets of the contract (one revision per key): the leases (the TTL only sweeps leases
 * nobody renewed for a day), the cron actor's replicated jobs (kept until removed) and its fire
 * claims (kept three days: longer than any catch-up gap they guard), and the heartbeat,
 * subagents actors' state (kept until removed), the approvals actor's records (kept a week) and the
 * router's active runs and pairing (kept until removed), the hooks actor's announcements (ten
 * minutes unless written again), and the OAuth tokens of auth profiles
 * (kept until `lurkbot auth logout`).
 */
const BUCKETS = [
  { name: LEASE_BUCKET, ttl: DAY_MS, description: "leases: one active instance per stateful actor" },
  { name: CRON_JOBS_BUCKET, description: "cron jobs, replicated between cron instances" },
  { name: CRON_FIRES_BUCKET, ttl: 3 * DAY_MS, description: "cron fire claims: each fire id once across instances" },
  { name: HEARTBEAT_BUCKET, description: "heartbeat state, for the instance that takes over" },
  { name: SUBAGENTS_BUCKET, description: "subagent child records, for the instance that takes over" },
  // a record matters at most 48 h (pending up to 24 h, its token valid up to 24 h more)
  { name: APPROVALS_BUCKET, ttl: 7 * DAY_MS, description: "approval records, for the instance that takes over" },
  { name: ROUTER_BUCKET, description: "the router's active runs and DM pairing, for the instance that takes over" },
  // a value expires unless the hooks actor writes it again (it does every few minutes while the agent's hooks run)
  { name: HOOKS_BUCKET, ttl: BOOTSTRAP_HOOKS_TTL_MS, description: "the agents whose agent:bootstrap hooks run, for agent-runners" },
  { name: AUTH_BUCKET, description: "OAuth tokens of auth profiles (refresh_token grant), refreshed by any agent-runner with compare-and-set" },
];

/**
 * Creates or updates every stream, then creates the buckets and the media store (its retention
 * and size from `media`, applied to an existing store too); safe to run on every start.
 * `replicas` > 1 in a cluster.
 */
export async function ensureStreams(nc: NatsConnection, prefix?: string, replicas = 1, media: Pick<MediaConfig, "retentionDays" | "storeMb"> = MEDIA_DEFAULTS): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const config of streamConfigs(prefix)) {
    const wanted = { ...config, num_replicas: replicas };
    try {
      await jsm.streams.info(config.name);
      await jsm.streams.update(config.name, wanted);
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
      await jsm.streams.add(wanted);
    }
  }
  const kvm = new Kvm(nc);
  for (const { name, ...opts } of BUCKETS) await kvm.create(name, { history: 1, replicas, ...opts });
  await ensureMediaStore(nc, replicas, media);
}

/** The media store (shared/runtime/media.ts): full means new files are refused (discard new), old ones expire. */
async function ensureMediaStore(nc: NatsConnection, replicas: number, media: Pick<MediaConfig, "retentionDays" | "storeMb">): Promise<void> {
  const maxAge = nanos(Math.round(media.retentionDays * DAY_MS));
  const maxBytes = media.storeMb * MB;
  await new Objm(nc).create(MEDIA_BUCKET, { ttl: maxAge, max_bytes: maxBytes, replicas, description: "media: files users and the agent send, by SHA-256" });
  const jsm = await jetstreamManager(nc);
  const stream = `OBJ_${MEDIA_BUCKET}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== maxAge || config.max_bytes !== maxBytes) await jsm.streams.update(stream, { ...config, max_age: maxAge, max_bytes: maxBytes });
}

function isStreamNotFound(err: unknown): boolean {
  const e = err as { name?: string; message?: string; code?: number; api_error?: { err_code?: number } };
  return e?.name === "StreamNotFoundError" || e?.api_error?.err_code === 10059 || /stream not found/i.test(e?.message ?? "");
}
