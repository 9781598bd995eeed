/**
 * Environment variable names that hold secrets: the launcher passes none of them to an actor
 * unless it is granted (services/cli/actors.ts ACTOR_SECRETS), hook handlers never see them unless
 * their entry sets them (shared/runtime/hooks/discovery.ts), and `lurkbot config` and the security
 * audit mask their values.
 */
export function isSecretEnvName(name: string): boolean {
  return name.startsWith("LURKBOT_NATS_PASS_") || /(API_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD)$/i.test(name);
}
