/**
 * `defineChannelActor`: the ActorDefinition of a channel (`channel-<name>`, its NATS user).
 * The adapter's `start(ctx)` connects to the platform and returns a DeliveryAdapter (+ `stop`);
 * the kit then reads the channel's deliveries (delivery.ts). The context gives the adapter:
 * - `publishInbound(input)`: persist a platform message in LURK_INBOUND (await it before
 *   acknowledging the platform; a duplicate platform message id is processed once);
 * - `watchRun(runId, handlers)`: draft/stream a run (run-watch.ts); `runIdFor(messageId)`;
 * - `settings`: `config.channels[<name>]` parsed by the channel's schema (defaults filled);
 * - `secret(field, configured)`: a configured or generated secret (secrets.ts);
 * - `dataDir`: `<dataDir>/channel-<name>/` (the sent-ledger lives in `ledger/` below it);
 * - `streams`: what was shown of each run while it was written (draft ids, sent blocks), in
 *   `streams/` (LMDB), so a restarted channel completes a reply instead of repeating it;
 * - `blocks`: block streaming (blocks.ts); the kit routes every delivery through it, so a
 *   block-streamed run's reply sends only what its blocks did not.
 * - `publishReaction(event)`: a user's reaction (reactions.ts: filtered by the channel's
 *   `reactionNotifications`, "own" by default, with the sent-ledger; stored like a message);
 * `settings.chunkMode` (when set) overrides the adapter's chunk mode, `settings.textLimit` its limit,
 * `settings.markdown.tables` its table mode (tables.ts). The adapter's `act` (actions.ts) does
 * the `message` tool's react/edit/delete; without it the kit answers "not supported".
 */
import { join } from "node:path";
import type { z } from "zod";
import { runIdFor, type ChannelName } from "../../contract/index.js";
import type { ActorDefinition, ActorRuntime } from "../actor.js";
import type { LurkConfig } from "../config.js";
import { registerSecret, type Logger } from "../logger.js";
import { LURKBOT_VERSION } from "../version.js";
import { BlockStreams } from "./blocks.js";
import type { ChunkMode } from "./chunk.js";
import type { TableMode } from "./tables.js";
import { startDelivery, type DeliveryAdapter } from "./delivery.js";
import { publishInbound, type InboundInput, type PublishedInbound } from "./inbound.js";
import { publishReaction, type ReactionEvent, type ReactionOutcome } from "./reactions.js";
import type { ReactionNotifications } from "../config-channels.js";
import { SentLedger } from "./ledger.js";
import { RunStreamStore } from "./run-streams.js";
import { watchRun, type RunWatch, type RunWatchOptions } from "./run-watch.js";
import { ensureChannelSecret } from "./secrets.js";

export interface ChannelContext<C> {
  rt: ActorRuntime;
  channel: ChannelName;
  settings: C;
  config: LurkConfig;
  log: Logger;
  dataDir: string;
  streams: RunStreamStore;
  blocks: BlockStreams;
  publishInbound(input: InboundInput): Promise<PublishedInbound>;
  /** a user's reaction: filtered (mode, own messages), then stored like a message (never starts a run) */
  publishReaction(event: ReactionEvent): Promise<ReactionOutcome>;
  watchRun(runId: string, opts: RunWatchOptions): RunWatch;
  runIdFor(platformMessageId: string): string;
  /** the configured value, else the one in <home>/credentials/channels.json (generated when absent) */
  secret(field: string, configured: string | undefined): string;
}

export interface ChannelAdapter extends DeliveryAdapter {
  stop?(): Promise<void>;
}

export interface ChannelSpec<S extends z.ZodType> {
  channel: ChannelName;
  description: string;
  version?: string;
  /** the channel's config schema (`config.channels[channel]` is parsed by it; absent = `{}`) */
  schema: S;
  start(ctx: ChannelContext<z.output<S>>): Promise<ChannelAdapter>;
  metadata?(settings: z.output<S>): Record<string, string>;
}

export const channelActorName = (channel: string) => `channel-${channel}`;

export function channelSettings<S extends z.ZodType>(spec: ChannelSpec<S>, config: LurkConfig): z.output<S> {
  const raw = (config.channels as Record<string, unknown>)[spec.channel] ?? {};
  return spec.schema.parse(raw);
}

export function defineChannelActor<S extends z.ZodType>(spec: ChannelSpec<S>): ActorDefinition {
  const name = channelActorName(spec.channel);
  return {
    name,
    version: spec.version ?? LURKBOT_VERSION,
    description: spec.description,
    metadata: (config) => spec.metadata?.(channelSettings(spec, config)) ?? {},
    async start(rt) {
      const settings = channelSettings(spec, rt.config) as z.output<S> & { maxAttempts?: number; concurrency?: number; textLimit?: number; chunkMode?: ChunkMode; accountId?: string; markdown?: { tables?: TableMode }; reactionNotifications?: ReactionNotifications };
      const dataDir = join(rt.config.dataDir, name);
      const ledger = new SentLedger(join(dataDir, "ledger"));
      rt.onStop({ stop: () => ledger.close() });
      const log = rt.log.child({ channel: spec.channel });
      const streams = new RunStreamStore(join(dataDir, "streams"));
      rt.onStop({ stop: () => streams.close() });
      const blocks = new BlockStreams(streams, spec.channel, rt.signal, log);
      const inbound = (input: InboundInput) => publishInbound({ js: rt.js, prefix: rt.subjects.prefix, channel: spec.channel, maxBytes: rt.limits.maxBytes, ...(settings.accountId ? { accountId: settings.accountId } : {}) }, input);
      const ctx: ChannelContext<z.output<S>> = {
        rt, channel: spec.channel, settings, config: rt.config, log, dataDir, streams, blocks,
        publishInbound: inbound,
        publishReaction: (event) => publishReaction({ mode: settings.reactionNotifications ?? "own", ledger, publish: inbound, log }, event),
        watchRun: (runId, opts) => watchRun(rt.nc, rt.subjects.prefix, runId, opts),
        runIdFor: (id) => runIdFor(spec.channel, id),
        secret: (field, configured) => {
          const { value, source, path } = ensureChannelSecret(rt.config, spec.channel, field, configured);
          registerSecret(value);
          if (source === "generated") log.info({ file: path, field }, "generated a channel secret");
          return value;
        },
      };
      const adapter = await spec.start(ctx);
      const limit = settings.textLimit ?? adapter.textLimit;
      const chunkMode = settings.chunkMode ?? adapter.chunkMode ?? "paragraph";
      const tables = settings.markdown?.tables ?? adapter.tables ?? "off";
      const deliver = adapter.deliver.bind(adapter);
      blocks.attach({ textLimit: limit, chunkMode, tables, deliver });
      startDelivery(rt, {
        channel: spec.channel,
        ledger,
        adapter: {
          ...adapter, textLimit: limit, chunkMode, tables, deliver: (part, dctx) => blocks.deliverFinal(part, dctx, deliver),
          ...(adapter.typing ? { typing: adapter.typing.bind(adapter) } : {}), ...(adapter.act ? { act: adapter.act.bind(adapter) } : {}),
        },
        maxAttempts: settings.maxAttempts ?? 5,
        concurrency: settings.concurrency ?? 4,
      });
      return { stop: async () => { await adapter.stop?.(); } };
    },
  };
}
