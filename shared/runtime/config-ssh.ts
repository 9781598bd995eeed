/**
 * `nats.ssh`: reach a LurkBot bus on another host through an SSH tunnel (shared/runtime/ssh-tunnel.ts)
 * instead of opening NATS to the network. The CLI (`--ssh TARGET`, env LURKBOT_NATS_SSH) and the
 * launcher open `ssh -N -L 127.0.0.1:<free port>:<remoteHost>:<remotePort> <target>` and use
 * `nats://127.0.0.1:<free port>`; the NATS users and passwords are the usual ones.
 *   "nats": { "ssh": { "target": "me@homeserver", "identityFile": "~/.ssh/id_ed25519" } }
 * `nats.url` must then stay loopback (its default): the tunnel replaces it.
 */
import { z } from "zod";
import { sshTunnelOptionsSchema } from "./ssh-tunnel.js";

const o = sshTunnelOptionsSchema.shape;

export const natsSshConfigSchema = z.object({
  /** `user@host` or a host alias of ~/.ssh/config (no leading "-", no spaces) */
  target: o.target,
  /** the ssh server's port (default: ssh's own) */
  port: o.port,
  /** private key file; relative to LURKBOT_HOME, `~/` is the user's home */
  identityFile: o.identityFile,
  /** where nats-server listens, as seen from the ssh server */
  remoteHost: o.remoteHost,
  remotePort: o.remotePort,
  connectTimeoutMs: o.connectTimeoutMs,
  /** ssh's StrictHostKeyChecking: yes or accept-new (default: ssh's own setting) */
  strictHostKeyChecking: o.strictHostKeyChecking,
  /** ssh's UserKnownHostsFile (default: ssh's own, ~/.ssh/known_hosts) */
  knownHostsFile: o.knownHostsFile,
});
export type NatsSshConfig = z.infer<typeof natsSshConfigSchema>;
