/**
 * A provider whose secret comes from a CredentialSource (credentials.ts): a bearer token or an
 * OAuth access token instead of a fixed API key. Each call asks the source for the current
 * secret and streams through a provider made for it (kept while the secret stays the same).
 *
 * Contract: the Provider contract (types.ts). A source that cannot give a secret ends the stream
 * with its LurkError. When the provider refuses the secret (PROVIDER_AUTH before anything
 * streamed) and the source is renewable, the call is made once more with a renewed secret (a
 * token revoked or rotated before its expiry); a second refusal is passed on, and the model chain
 * cools the profile down as for a refused API key.
 */
import type { CredentialSource } from "../credentials.js";
import type { Provider, ProviderRequest, ProviderStreamEvent } from "./types.js";
import { LurkError } from "../../../shared/contract/index.js";

export class CredentialedProvider implements Provider {
  private current: { secret: string; provider: Provider } | undefined;

  constructor(readonly name: string, private readonly source: CredentialSource, private readonly make: (secret: string) => Provider) {}

  async *stream(request: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    let refused: string | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      let secret: string;
      try {
        secret = await this.source.secret(request.signal, refused);
      } catch (err) {
        yield { type: "error", error: LurkError.from(err) };
        return;
      }
      const provider = this.providerFor(secret);
      let streamed = false;
      for await (const ev of provider.stream(request)) {
        const retry = ev.type === "error" && ev.error.code === "PROVIDER_AUTH" && !streamed && attempt === 0 && this.source.renewable;
        if (retry) {
          refused = secret;
          break;
        }
        if (ev.type !== "error") streamed = true;
        yield ev;
      }
      if (refused !== secret) return;
    }
  }

  private providerFor(secret: string): Provider {
    if (this.current?.secret !== secret) this.current = { secret, provider: this.make(secret) };
    return this.current.provider;
  }
}
