/**
 * The MCP servers of `mcp.servers` (services/mcp/README.md), enabled or not:
 *  - `mcp.<server>.secret-literal` (warning): a secret-looking value written as it is into the
 *    server's `env` or `headers` (a secret-named variable or header, or a value shaped like a
 *    token) instead of a `${LURKBOT_MCP_…}` reference: config.json is read by every actor and
 *    copied to other hosts and backups, while a stored `LURKBOT_MCP_*` secret reaches the mcp
 *    actor only. The fix stores it (`lurkbot config set-secret`) and writes the reference (its
 *    `fixCommand`, for a single value without an auth scheme: the `config set` of the reference);
 *  - `mcp.<server>.plain-http` (critical with headers, else warning): a remote server reached
 *    over http:// on another host: its headers (tokens), the tools' arguments and results cross
 *    the network in clear.
 * Findings name keys, never values.
 */
import { isStdioServer, type McpServerConfig } from "../../../shared/runtime/config-mcp.js";
import { isLoopbackUrl } from "../../../shared/runtime/loopback-host.js";
import { isSecretEnvName, MCP_SECRET_PREFIX } from "../../../shared/runtime/secret-env.js";
import { formatPath } from "../config-cmd-path.js";
import { configSetCommand, finding, type AuditContext, type AuditFinding } from "./finding.js";

/** names of variables and headers that hold credentials */
const SECRET_NAME = /(^|[_-])(api[_-]?key|key|token|secret|passw(or)?d|pat|credentials?|auth|authorization|cookie)$/i;
/** an auth scheme before the secret (kept in the reference: `Bearer ${…}`) */
const SCHEME = /^(Bearer|Basic|Token|Bot)\s+(?=\S)/i;
/** values shaped like a well-known kind of token, whatever their key */
const TOKEN_SHAPE = /^(sk-|sk_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abprs]-|AKIA|AIza|hf_|pk_live_|rk_live_)[A-Za-z0-9_-]{8,}/;

export interface McpLiteralSecret {
  /** `env` or `headers` */
  where: "env" | "headers";
  key: string;
  /** the scheme written before the secret (`Bearer `), kept in front of the reference */
  scheme: string;
}

/** Whether `value` of the variable or header `key` looks like a credential written as it is (no `${…}` reference in it); its scheme if so. */
export function literalSecret(key: string, value: unknown): { scheme: string } | null {
  if (typeof value !== "string" || value.includes("${") || value.trim().length < 8) return null;
  const scheme = SCHEME.exec(value)?.[0] ?? "";
  return isSecretEnvName(key) || SECRET_NAME.test(key) || scheme || TOKEN_SHAPE.test(value.slice(scheme.length)) ? { scheme } : null;
}

/** The secret-looking literal values of a server's env or headers. */
export function mcpLiteralSecrets(server: McpServerConfig): McpLiteralSecret[] {
  const where = isStdioServer(server) ? "env" : "headers";
  return Object.entries(isStdioServer(server) ? server.env : server.headers).flatMap(([key, value]) => {
    const hit = literalSecret(key, value);
    return hit ? [{ where, key, scheme: hit.scheme }] : [];
  });
}

/** The variable a literal secret of `server` is stored as: LURKBOT_MCP_<SERVER>_<KEY> (what `config set-secret` takes). */
export function mcpSecretName(server: string, key: string): string {
  return `${MCP_SECRET_PREFIX}${`${server}_${key}`.toUpperCase().replace(/[^A-Z0-9_]/g, "_").replace(/_+/g, "_")}`.slice(0, MCP_SECRET_PREFIX.length + 100);
}

/** a server's name as a token of finding ids (lower case, `-` for `_`) */
const idToken = (name: string) => name.toLowerCase().replace(/_/g, "-");

export function mcpChecks({ config }: AuditContext): AuditFinding[] {
  const out: AuditFinding[] = [];
  for (const [name, server] of Object.entries(config.mcp.servers)) {
    const literals = mcpLiteralSecrets(server);
    if (literals.length) {
      const fixes = literals.map((l) => {
        const path = formatPath([{ kind: "key", key: "mcp" }, { kind: "key", key: "servers" }, { kind: "key", key: name }, { kind: "key", key: l.where }, { kind: "key", key: l.key }]);
        const variable = mcpSecretName(name, l.key);
        return { path, variable, set: configSetCommand(path, `${l.scheme}\${${variable}}`) };
      });
      const one = fixes.length === 1 && literals[0]!.scheme === "" ? fixes[0] : undefined;
      out.push(finding({
        id: `mcp.${idToken(name)}.secret-literal`, level: "warning",
        title: `the MCP server "${name}" has ${literals.length === 1 ? "a secret" : `${literals.length} secrets`} written into config.json`,
        detail: `${fixes.map((f) => f.path).join(", ")} ${literals.length === 1 ? "holds a value that looks" : "hold values that look"} like a credential, in plain text. Every actor reads config.json, and it is what gets copied to other hosts and into backups; a \`\${LURKBOT_MCP_…}\` reference there, with the value stored by \`lurkbot config set-secret\` (credentials/secrets.json, mode 600), reaches the mcp actor only.`,
        fix: `${fixes.map((f) => `store the value with \`npx lurkbot config set-secret ${f.variable}\` (read without echo), then write the reference: \`${f.set}\``).join("; ")}; then restart the mcp actor`,
        // the config change of a single secret; set-secret before it (the fix says so)
        ...(one ? { fixCommand: one.set } : {}),
      }));
    }
    if (!isStdioServer(server) && new URL(server.url).protocol === "http:" && !isLoopbackUrl(server.url)) {
      const headers = Object.keys(server.headers).length > 0;
      out.push(finding({
        id: `mcp.${idToken(name)}.plain-http`, level: headers ? "critical" : "warning",
        title: `the MCP server "${name}" is reached over plain http`,
        detail: `mcp.servers.${name}.url is ${new URL(server.url).origin}: ${headers ? "its headers (the credentials sent with every request), " : ""}the tools' arguments (what the agent sends, from conversations) and their results travel unencrypted to another host; whoever sees or alters that traffic reads them${headers ? ", can use the credentials" : ""} and can feed the agent results of their own.`,
        fix: "use the server's https:// address (or a TLS reverse proxy in front of it), or run it on this host and use http://127.0.0.1:<port>",
      }));
    }
  }
  return out;
}
