/**
 * Who may use the web chat, and which token signs in whom.
 *  - `channels.web.users` unset: one user (`userId`, display name "Web") with the single token
 *    (`token`, env LURKBOT_WEB_TOKEN, else generated into channels.json); their `scope` is "",
 *    so their chats keep the names they always had (user-scope.ts).
 *  - `users` set: each entry is a user with their own token; `scope` = their id.
 * `authenticate` compares the given token with EVERY user's token in constant time (SHA-256
 * digests, so neither the token's length nor which user matched shows in the timing).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { WebChannelConfig } from "../../shared/runtime/config-channels.js";

export interface WebUser {
  /** the DM peer and sender id of the user's messages */
  id: string;
  /** the sender's display name */
  name: string;
  /** "" for the single-token user; else the id: prefixes the user's conversations, session names and files */
  scope: string;
}

interface Credential { user: WebUser; digest: Buffer }

const digest = (token: string) => createHash("sha256").update(token, "utf8").digest();

export class WebUsers {
  private readonly credentials: Credential[];
  private readonly byScope: Map<string, WebUser>;

  constructor(entries: Array<{ user: WebUser; token: string }>) {
    this.credentials = entries.map(({ user, token }) => ({ user, digest: digest(token) }));
    this.byScope = new Map(entries.map(({ user }) => [user.scope, user]));
  }

  /** true when the users come from `channels.web.users` (each with their own scope) */
  get several(): boolean {
    return !this.byScope.has("");
  }

  get all(): WebUser[] {
    return this.credentials.map((c) => c.user);
  }

  /** The user whose token this is, else undefined; every token is compared, none is skipped. */
  authenticate(token: string): WebUser | undefined {
    if (!token) return undefined;
    const given = digest(token);
    let found: WebUser | undefined;
    for (const c of this.credentials) {
      const match = timingSafeEqual(given, c.digest);
      found = match ? c.user : found;
    }
    return found;
  }

  /** The user of a scope ("" = the single-token user). */
  ofScope(scope: string): WebUser | undefined {
    return this.byScope.get(scope);
  }
}

/**
 * The users of the settings. `singleToken` is called only without `users` (it reads or
 * generates the single token, so nothing is generated when `users` is set).
 */
export function webUsersOf(settings: WebChannelConfig, singleToken: () => string): WebUsers {
  if (!settings.users) return new WebUsers([{ user: { id: settings.userId, name: "Web", scope: "" }, token: singleToken() }]);
  return new WebUsers(settings.users.map((u) => ({ user: { id: u.id, name: u.name ?? u.id, scope: u.id }, token: u.token })));
}
