/**
 * Environment variable names that hold secrets: the launcher passes none of them to an actor
 * unless it is granted (services/cli/actors.ts ACTOR_SECRETS), hook handlers never see them unless
 * their entry sets them (shared/runtime/hooks/discovery.ts), and `lurkbot config` and the security
 * audit mask their values.
 */

/** Secrets for MCP servers (config-mcp.ts `${LURKBOT_MCP_…}` references): only the mcp actor gets them. */
export const MCP_SECRET_PREFIX = "LURKBOT_MCP_";

/** Whether the variable `name` holds a secret. */
export function isSecretEnvName(name: string): boolean {
  return name.startsWith("LURKBOT_NATS_PASS_") || name.startsWith(MCP_SECRET_PREFIX) || /(API_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD)$/i.test(name);
}

