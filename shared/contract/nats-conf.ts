/**
 * Renders nats.conf from the actor grants. Passwords, the listen address and the store dir are
 * `$VARIABLES` that nats-server reads from its environment, so the file holds no secret and the
 * launcher (or systemd) supplies them from the credentials generated at setup.
 */
import { ADMIN_USER, actorGrants, expandGrant, passwordEnvName } from "./actors.js";

const quote = (value: string) => JSON.stringify(value);

export function renderNatsConf(prefix?: string): string {
  const lines: string[] = [
    "# LurkBot nats-server configuration. Generated from shared/contract/actors.ts by",
    "# `npm run contract:export`; edit the contract, not this file (a test checks they agree).",
    "#",
    "# Variables come from nats-server's environment (the launcher and the systemd units set them):",
    "#   LURKBOT_NATS_HOST, LURKBOT_NATS_PORT   listen address (loopback by default)",
    "#   LURKBOT_NATS_STORE                     JetStream store dir (under LURKBOT_HOME)",
    "#   LURKBOT_NATS_PASS_<USER>               one password per actor, generated at setup",
    "",
    "host: $LURKBOT_NATS_HOST",
    "port: $LURKBOT_NATS_PORT",
    "max_payload: 1048576",
    "",
    "jetstream {",
    "  store_dir: $LURKBOT_NATS_STORE",
    "  max_memory_store: 268435456",
    "  max_file_store: 10737418240",
    "}",
    "",
    "# No anonymous access: every connection names one of these users.",
    "authorization {",
    "  users: [",
    `    { user: ${ADMIN_USER}, password: $${passwordEnvName(ADMIN_USER)} }`,
  ];
  for (const grant of actorGrants(prefix)) {
    const { publish, subscribe } = expandGrant(grant, prefix);
    lines.push(`    # ${grant.description}`);
    lines.push(`    { user: ${quote(grant.user)}, password: $${passwordEnvName(grant.user)}, permissions: {`);
    lines.push(`        publish: { allow: [${publish.map(quote).join(", ")}] }`);
    lines.push(`        subscribe: { allow: [${subscribe.map(quote).join(", ")}] }`);
    if (grant.responder) lines.push("        allow_responses: true");
    lines.push("    } }");
  }
  lines.push("  ]", "}", "");
  return lines.join("\n");
}
