/**
 * `--deep`, the running browser actors: every instance answering `$SRV.INFO.browser` reports in
 * its metadata (services/browser/actor.ts) whether its tools are on (`browserEnabled`) and
 * whether it runs Chromium with Chromium's sandbox (`chromiumSandbox`, the rule of
 * shared/runtime/chromium-sandbox.ts on that host: its config and whether it runs as root).
 * An instance with its tools on and the sandbox off, on any host, is a warning. An instance of
 * an older version without `chromiumSandbox` is not judged.
 */
import { Svcm, type ServiceInfo } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import { isNoResponders } from "../../../shared/runtime/client.js";
import { finding, type AuditFinding } from "./finding.js";

async function browserInstances(nc: NatsConnection): Promise<ServiceInfo[]> {
  const out: ServiceInfo[] = [];
  try {
    for await (const info of await new Svcm(nc).client({ strategy: "stall", maxWait: 2_000, stall: 300 }).info("browser")) out.push(info);
  } catch (err) {
    if (!isNoResponders(err)) throw err;
  }
  return out;
}

export async function browserDeepChecks(nc: NatsConnection, browserUsed: boolean): Promise<AuditFinding[]> {
  let instances: ServiceInfo[];
  try {
    instances = await browserInstances(nc);
  } catch (err) {
    return [finding({
      id: "deep.browser.unknown", level: "info",
      title: "could not ask the browser actors how they run",
      detail: `$SRV.INFO.browser failed: ${(err as Error)?.message ?? String(err)}`,
      fix: "run `lurkbot status` to see what answers, then run the audit again",
    })];
  }
  const bare = instances.filter((i) => i.metadata?.browserEnabled === "true" && i.metadata?.chromiumSandbox === "false");
  if (bare.length === 0) return [];
  const label = (i: ServiceInfo) => `browser@${i.metadata?.host ?? "?"}${i.metadata?.pid ? `:${i.metadata.pid}` : ""}`;
  return [finding({
    id: "deep.browser.unsandboxed", level: browserUsed ? "warning" : "info",
    title: "a running browser actor runs Chromium without its sandbox",
    detail: `${bare.map(label).join(", ")} ${bare.length === 1 ? "reports" : "report"} chromiumSandbox "false" (browser.sandbox false there, or the actor runs as root): a Chromium bug that a page reaches runs code with that actor's user rights on that host, LurkBot's credentials in reach.`,
    fix: "on that host run LurkBot as an unprivileged user and remove browser.sandbox: false from its config.json, then restart its browser actor",
  })];
}
